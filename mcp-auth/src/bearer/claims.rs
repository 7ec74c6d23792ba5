//! Checks of registered claims (RFC 7519 §4.1) as pure functions of the
//! claims and the time, and the principal and scopes a token grants.
//!
//! JWTs are checked by `jsonwebtoken` and then again here, so that tokens
//! from keys and from a verifier obey exactly the same rules.

use serde_json::{Map, Value};

use super::verifier::TokenError;

/// Which audiences are accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Audience {
    /// `aud` must name one of these.
    OneOf(Vec<String>),
    /// Not checked (only with a verifier, which is then responsible for it).
    Any,
}

/// What the registered claims must satisfy.
#[derive(Debug, Clone)]
pub(crate) struct ClaimRules {
    pub(crate) audience: Audience,
    pub(crate) issuers: Vec<String>,
    pub(crate) skew_secs: u64,
    pub(crate) require_exp: bool,
}

/// A NumericDate: a non-negative number of seconds (fractions rounded down).
fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<Option<u64>, TokenError> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
            (Some(v), _) => Ok(Some(v)),
            (None, Some(f)) if f.is_finite() && f >= 0.0 && f < u64::MAX as f64 => Ok(Some(f as u64)),
            _ => Err(TokenError::InvalidClaim(name.to_owned())),
        },
        Some(_) => Err(TokenError::InvalidClaim(name.to_owned())),
    }
}

/// Checks `exp`, `nbf`, `iss` and `aud` at time `now` (seconds since the epoch).
pub(crate) fn check(claims: &Map<String, Value>, rules: &ClaimRules, now: u64) -> Result<(), TokenError> {
    match numeric_date(claims, "exp")? {
        Some(exp) if exp.saturating_add(rules.skew_secs) < now => return Err(TokenError::Expired),
        None if rules.require_exp => return Err(TokenError::MissingClaim("exp".into())),
        _ => {}
    }
    if numeric_date(claims, "nbf")?.is_some_and(|nbf| nbf > now.saturating_add(rules.skew_secs)) {
        return Err(TokenError::NotYetValid);
    }
    if !rules.issuers.is_empty() {
        match claims.get("iss") {
            None => return Err(TokenError::MissingClaim("iss".into())),
            Some(Value::String(iss)) if rules.issuers.contains(iss) => {}
            Some(Value::String(_)) => return Err(TokenError::WrongIssuer),
            Some(_) => return Err(TokenError::InvalidClaim("iss".into())),
        }
    }
    if let Audience::OneOf(accepted) = &rules.audience {
        let ok = match claims.get("aud") {
            None => return Err(TokenError::MissingClaim("aud".into())),
            Some(Value::String(aud)) => accepted.contains(aud),
            Some(Value::Array(auds)) => auds
                .iter()
                .any(|a| a.as_str().is_some_and(|a| accepted.iter().any(|x| x == a))),
            Some(_) => return Err(TokenError::InvalidClaim("aud".into())),
        };
        if !ok {
            return Err(TokenError::WrongAudience);
        }
    }
    Ok(())
}

/// The principal: the string claim `name` (default `sub`), non-empty.
pub(crate) fn principal(claims: &Map<String, Value>, name: &str) -> Result<String, TokenError> {
    match claims.get(name) {
        None => Err(TokenError::MissingClaim(name.to_owned())),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(_) => Err(TokenError::InvalidClaim(name.to_owned())),
    }
}

/// The scopes of claim `name`: a space-separated string or an array of
/// strings; absent means none. Any other shape refuses the token.
pub(crate) fn scopes(claims: &Map<String, Value>, name: &str) -> Result<Vec<String>, TokenError> {
    match claims.get(name) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(s.split_whitespace().map(str::to_owned).collect()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) if !s.is_empty() && !s.contains(char::is_whitespace) => Ok(s.clone()),
                _ => Err(TokenError::InvalidClaim(name.to_owned())),
            })
            .collect(),
        Some(_) => Err(TokenError::InvalidClaim(name.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: u64 = 1_700_000_000;

    fn rules() -> ClaimRules {
        ClaimRules {
            audience: Audience::OneOf(vec!["mcp".into()]),
            issuers: vec!["https://as".into()],
            skew_secs: 60,
            require_exp: true,
        }
    }

    fn claims(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn valid() -> Value {
        json!({"sub": "alice", "aud": "mcp", "iss": "https://as", "exp": NOW + 100, "nbf": NOW - 10})
    }

    fn with(field: &str, value: Value) -> Map<String, Value> {
        let mut c = claims(valid());
        c.insert(field.into(), value);
        c
    }

    fn without(field: &str) -> Map<String, Value> {
        let mut c = claims(valid());
        c.remove(field);
        c
    }

    #[test]
    fn valid_claims_pass() {
        assert_eq!(check(&claims(valid()), &rules(), NOW), Ok(()));
        assert_eq!(check(&with("aud", json!(["x", "mcp"])), &rules(), NOW), Ok(()));
        assert_eq!(check(&with("exp", json!(1.7e9 + 100.5)), &rules(), NOW), Ok(()));
    }

    #[test]
    fn expiry_and_not_before_with_skew() {
        let r = rules();
        assert_eq!(check(&with("exp", json!(NOW - 30)), &r, NOW), Ok(()), "within skew");
        assert_eq!(check(&with("exp", json!(NOW - 60)), &r, NOW), Ok(()), "at the edge");
        assert_eq!(check(&with("exp", json!(NOW - 61)), &r, NOW), Err(TokenError::Expired));
        assert_eq!(check(&with("nbf", json!(NOW + 60)), &r, NOW), Ok(()));
        assert_eq!(
            check(&with("nbf", json!(NOW + 61)), &r, NOW),
            Err(TokenError::NotYetValid)
        );
        let strict = ClaimRules {
            skew_secs: 0,
            ..rules()
        };
        assert_eq!(
            check(&with("exp", json!(NOW - 1)), &strict, NOW),
            Err(TokenError::Expired)
        );
    }

    #[test]
    fn non_numeric_dates_fail() {
        for field in ["exp", "nbf"] {
            for v in [json!("never"), json!(-1), json!(null), json!([1])] {
                assert_eq!(
                    check(&with(field, v.clone()), &rules(), NOW),
                    Err(TokenError::InvalidClaim(field.into())),
                    "{field} = {v}"
                );
            }
        }
    }

    #[test]
    fn exp_requirement() {
        assert_eq!(
            check(&without("exp"), &rules(), NOW),
            Err(TokenError::MissingClaim("exp".into()))
        );
        let lax = ClaimRules {
            require_exp: false,
            ..rules()
        };
        assert_eq!(check(&without("exp"), &lax, NOW), Ok(()));
    }

    #[test]
    fn issuer() {
        assert_eq!(
            check(&with("iss", json!("https://evil")), &rules(), NOW),
            Err(TokenError::WrongIssuer)
        );
        assert_eq!(
            check(&without("iss"), &rules(), NOW),
            Err(TokenError::MissingClaim("iss".into()))
        );
        assert_eq!(
            check(&with("iss", json!(1)), &rules(), NOW),
            Err(TokenError::InvalidClaim("iss".into()))
        );
        let any_issuer = ClaimRules {
            issuers: vec![],
            ..rules()
        };
        assert_eq!(check(&with("iss", json!("https://other")), &any_issuer, NOW), Ok(()));
    }

    #[test]
    fn audience() {
        assert_eq!(
            check(&with("aud", json!("other")), &rules(), NOW),
            Err(TokenError::WrongAudience)
        );
        assert_eq!(
            check(&with("aud", json!(["a", "b"])), &rules(), NOW),
            Err(TokenError::WrongAudience)
        );
        assert_eq!(
            check(&with("aud", json!([])), &rules(), NOW),
            Err(TokenError::WrongAudience)
        );
        assert_eq!(
            check(&without("aud"), &rules(), NOW),
            Err(TokenError::MissingClaim("aud".into()))
        );
        assert_eq!(
            check(&with("aud", json!(7)), &rules(), NOW),
            Err(TokenError::InvalidClaim("aud".into()))
        );
        let any = ClaimRules {
            audience: Audience::Any,
            ..rules()
        };
        assert_eq!(check(&without("aud"), &any, NOW), Ok(()));
    }

    #[test]
    fn principal_claim() {
        assert_eq!(principal(&claims(valid()), "sub"), Ok("alice".into()));
        assert_eq!(principal(&with("uid", json!("u1")), "uid"), Ok("u1".into()));
        assert_eq!(
            principal(&without("sub"), "sub"),
            Err(TokenError::MissingClaim("sub".into()))
        );
        assert_eq!(
            principal(&with("sub", json!("")), "sub"),
            Err(TokenError::InvalidClaim("sub".into()))
        );
        assert_eq!(
            principal(&with("sub", json!(5)), "sub"),
            Err(TokenError::InvalidClaim("sub".into()))
        );
    }

    #[test]
    fn scopes_as_string_or_array() {
        assert_eq!(
            scopes(&with("scope", json!("a  b c")), "scope"),
            Ok(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(
            scopes(&with("scp", json!(["a", "b"])), "scp"),
            Ok(vec!["a".into(), "b".into()])
        );
        assert_eq!(scopes(&claims(valid()), "scope"), Ok(vec![]));
        for bad in [json!(1), json!({"a": 1}), json!(["a", 1]), json!(["a b"]), json!([""])] {
            assert_eq!(
                scopes(&with("scope", bad), "scope"),
                Err(TokenError::InvalidClaim("scope".into()))
            );
        }
    }
}
