//! Prompts: raw (the arguments as a JSON object) or typed (the arguments deserialized into a
//! `serde` type whose fields declare them).

use std::future::Future;
use std::sync::Arc;

use mcp_protocol::model::{GetPromptResult, Icon, PromptArgument, PromptDef, PromptMessage};
use mcp_runtime::Ctx;
use mcp_runtime::handler::{HandlerError, PromptHandler, PromptResult};
use mcp_runtime::registry::{PromptEntry, RegistryError};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::schema::schema_of;

/// What a prompt handler may return: a [`GetPromptResult`], its messages, one message, or a
/// `Result` of one of these with a [`HandlerError`].
pub trait IntoPromptResult {
    /// Converts into the runtime's prompt result.
    fn into_prompt_result(self) -> PromptResult;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> PromptResult {
        Ok(self)
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> PromptResult {
        Ok(GetPromptResult::new(self))
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> PromptResult {
        Ok(GetPromptResult::new(vec![self]))
    }
}

impl<T: IntoPromptResult> IntoPromptResult for Result<T, HandlerError> {
    fn into_prompt_result(self) -> PromptResult {
        self.and_then(IntoPromptResult::into_prompt_result)
    }
}

/// A prompt ready to register.
pub struct Prompt {
    def: PromptDef,
    handler: Arc<dyn PromptHandler>,
    scopes: Vec<String>,
}

impl std::fmt::Debug for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompt").field("def", &self.def).finish_non_exhaustive()
    }
}

impl Prompt {
    /// A prompt rendered by `handler(arguments, ctx)`; declare its arguments with
    /// [`argument`](Self::argument). Required arguments are checked before the handler runs.
    pub fn new<F, Fut, R>(name: impl Into<String>, description: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoPromptResult,
    {
        let handler = Arc::new(move |args: Map<String, Value>, ctx: Ctx| {
            let fut = handler(args, ctx);
            async move { fut.await.into_prompt_result() }
        });
        Prompt {
            def: PromptDef::new(name).with_description(description),
            handler,
            scopes: Vec::new(),
        }
    }

    /// A prompt whose arguments deserialize into `A`: each field of `A` is a declared argument
    /// (its doc comment the description; required unless it is an `Option` or has a default).
    /// Prompt arguments are strings on the wire, so `A`'s fields are `String` or
    /// `Option<String>`. Arguments that do not fit are -32602.
    ///
    /// ```
    /// use mcp_server::prelude::*;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Review {
    ///     /// The code to review.
    ///     code: String,
    ///     /// What to focus on.
    ///     focus: Option<String>,
    /// }
    ///
    /// let prompt = Prompt::typed("review", "Asks for a code review", |a: Review, _ctx| async move {
    ///     let focus = a.focus.unwrap_or_else(|| "correctness".into());
    ///     GetPromptResult::default().user(format!("Review this for {focus}:\n{}", a.code))
    /// });
    /// assert_eq!(prompt.def().arguments.len(), 2);
    /// ```
    pub fn typed<A, F, Fut, R>(name: impl Into<String>, description: impl Into<String>, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoPromptResult,
    {
        let handler = Arc::new(handler);
        let raw = move |args: Map<String, Value>, ctx: Ctx| {
            let handler = handler.clone();
            async move {
                match serde_json::from_value::<A>(Value::Object(args)) {
                    Ok(a) => handler(a, ctx).await.into_prompt_result(),
                    Err(e) => Err(HandlerError::invalid_params(format!("Invalid prompt arguments: {e}"))),
                }
            }
        };
        let mut prompt = Prompt::new(name, description, raw);
        for arg in arguments_of(&schema_of::<A>()) {
            prompt.def = prompt.def.with_argument(arg);
        }
        prompt
    }

    /// Declares an argument.
    pub fn argument(mut self, name: impl Into<String>, description: impl Into<String>, required: bool) -> Self {
        self.def = self.def.with_argument(PromptArgument::new(name, description, required));
        self
    }

    /// Sets the title.
    pub fn title(mut self, v: impl Into<String>) -> Self {
        self.def = self.def.with_title(v);
        self
    }

    /// Adds an icon (listed from 2025-11-25 on).
    pub fn icon(mut self, icon: Icon) -> Self {
        self.def = self.def.with_icon(icon);
        self
    }

    /// Sets the icons, replacing those added before (listed from 2025-11-25 on).
    pub fn icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.def = self.def.with_icons(icons);
        self
    }

    /// Sets `_meta` (listed by `prompts/list` beside the prompt's other fields).
    pub fn meta(mut self, meta: Value) -> Self {
        self.def = self.def.with_meta(meta);
        self
    }

    /// The definition.
    pub fn def(&self) -> &PromptDef {
        &self.def
    }

    /// The OAuth scopes getting this prompt needs, besides those every `prompts/get` needs. A
    /// caller short of one is refused before the handler runs, naming every scope it needs. A
    /// string that is not a scope token makes the registration fail.
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The registry entry of the prompt (a scope that is not a scope token fails).
    pub fn into_entry(self) -> Result<PromptEntry, RegistryError> {
        PromptEntry::new(self.def, self.handler).with_scopes(self.scopes)
    }
}

/// The prompt arguments an object schema declares: its properties, in order, with their
/// descriptions, required as the schema says.
fn arguments_of(schema: &Value) -> Vec<PromptArgument> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, p)| {
            let mut arg = PromptArgument::new(name.clone(), "", required.contains(&name.as_str()));
            arg.description = p.get("description").and_then(Value::as_str).map(str::to_owned);
            arg
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// The topic.
        topic: String,
        /// How long.
        length: Option<String>,
    }

    #[test]
    fn typed_arguments_come_from_the_fields() {
        let p = Prompt::typed(
            "p",
            "d",
            |a: Args, _ctx| async move { PromptMessage::user_text(a.topic) },
        );
        let args = &p.def().arguments;
        assert_eq!(args.len(), 2);
        assert_eq!((args[0].name.as_str(), args[0].required), ("topic", true));
        assert_eq!(args[0].description.as_deref(), Some("The topic."));
        assert_eq!((args[1].name.as_str(), args[1].required), ("length", false));
    }
}
