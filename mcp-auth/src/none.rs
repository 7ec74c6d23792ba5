//! The `none` provider: every request is `anonymous`.
//!
//! It never refuses a request and so never sends a challenge (an earlier
//! implementation sent a bogus `WWW-Authenticate: None`).

use crate::{AuthInfo, AuthProvider, BoxFuture, Challenge};

/// The default provider: every request is [`ANONYMOUS`](crate::ANONYMOUS), with no scopes.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAuth;

impl AuthProvider for NoAuth {
    fn authenticate<'a>(&'a self, _parts: &'a http::request::Parts) -> BoxFuture<'a, Result<AuthInfo, Challenge>> {
        Box::pin(async { Ok(AuthInfo::anonymous()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ANONYMOUS, test_parts};

    #[tokio::test]
    async fn none_is_anonymous() {
        let parts = test_parts(&[("authorization", "Bearer whatever")]);
        let info = NoAuth.authenticate(&parts).await.unwrap();
        assert_eq!(&*info.principal, ANONYMOUS);
        assert!(info.scopes.is_empty());
        assert!(info.claims.is_empty());
    }
}
