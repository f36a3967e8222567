//! Chat prompt formatting: the model's own Jinja template (`tokenizer.chat_template`) rendered
//! the way Hugging Face's `apply_chat_template` does, or llama.cpp's built-in Gemma format for a
//! file without one.

use super::tokenizer::Tokenizer;
use crate::gguf::GgufFile;
use crate::{Error, Result};

/// How a file turns messages into a prompt: its own `tokenizer.chat_template`, or llama.cpp's
/// built-in Gemma format when it has none.
pub struct ChatFormat<'a> {
    template: Option<&'a str>,
    tokenizer: &'a Tokenizer,
}

impl<'a> ChatFormat<'a> {
    pub fn new(gguf: &'a GgufFile, tokenizer: &'a Tokenizer) -> Self {
        ChatFormat {
            template: gguf.get_str("tokenizer.chat_template").ok(),
            tokenizer,
        }
    }

    /// Whether the file has a template of its own.
    pub fn has_template(&self) -> bool {
        self.template.is_some()
    }

    /// The prompt text for `messages` (ending with the assistant turn's opening when
    /// `add_generation_prompt`).
    pub fn render(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
        enable_thinking: Option<bool>,
    ) -> Result<String> {
        let Some(template) = self.template else {
            return Ok(format_gemma(messages, add_generation_prompt));
        };
        let text = |id: Option<u32>| id.and_then(|i| self.tokenizer.token_text(i)).unwrap_or("");
        let ctx = TemplateContext {
            bos_token: text(self.tokenizer.bos()),
            eos_token: text(self.tokenizer.eos()),
            enable_thinking,
        };
        render_template(template, messages, add_generation_prompt, &ctx)
    }

    /// The prompt's token ids: special tokens parsed, and BOS added unless the template already
    /// wrote it (Llama 3's and Phi-3's templates start with `bos_token`), so there is one BOS.
    pub fn tokens(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
        enable_thinking: Option<bool>,
    ) -> Result<Vec<u32>> {
        let prompt = self.render(messages, add_generation_prompt, enable_thinking)?;
        let bos = self
            .tokenizer
            .bos()
            .and_then(|i| self.tokenizer.token_text(i));
        let wrote_bos = bos.is_some_and(|b| !b.is_empty() && prompt.starts_with(b));
        Ok(self.tokenizer.encode(&prompt, !wrote_bos, true))
    }
}

/// One chat turn: `role` is `"system"`, `"user"`, `"assistant"` (or any other role name, which
/// is passed through), `content` its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// Formats `messages` with the Gemma template (llama.cpp `LLM_CHAT_TEMPLATE_GEMMA`):
///
/// ```text
/// <start_of_turn>user
/// {content}<end_of_turn>
/// <start_of_turn>model
/// {content}<end_of_turn>
/// ```
///
/// Content is trimmed of C `isspace` whitespace; role `assistant` becomes `model`. A system
/// message is not a turn: its trimmed content is appended to a pending system prompt that is
/// written as `{system}\n\n` at the start of the next non-`model` turn (several system messages
/// concatenate without a separator; one with no later user turn is dropped). With
/// `add_generation_prompt`, `<start_of_turn>model\n` ends the text. There is no BOS in the text:
/// it comes from the tokenizer's `add_bos`, so encode the result with `add_special = true` and
/// `parse_special = true`.
pub fn format_gemma(messages: &[ChatMessage], add_generation_prompt: bool) -> String {
    let mut out = String::new();
    let mut system = String::new();
    for m in messages {
        if m.role == "system" {
            system.push_str(trim_c(&m.content));
            continue;
        }
        let role = if m.role == "assistant" {
            "model"
        } else {
            m.role.as_str()
        };
        out.push_str("<start_of_turn>");
        out.push_str(role);
        out.push('\n');
        if !system.is_empty() && role != "model" {
            out.push_str(&system);
            out.push_str("\n\n");
            system.clear();
        }
        out.push_str(trim_c(&m.content));
        out.push_str("<end_of_turn>\n");
    }
    if add_generation_prompt {
        out.push_str("<start_of_turn>model\n");
    }
    out
}

/// Trims the bytes C's `isspace` accepts in the "C" locale (space, \t, \n, \v, \f, \r), as
/// llama.cpp's `trim` does; Unicode spaces such as U+00A0 are kept.
fn trim_c(s: &str) -> &str {
    s.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\x0B' | '\x0C' | '\r'))
}

/// Variables a template reads besides `messages` and `add_generation_prompt`.
#[derive(Debug, Clone, Default)]
pub struct TemplateContext<'a> {
    pub bos_token: &'a str,
    pub eos_token: &'a str,
    /// Qwen 3's switch: `Some(false)` writes the empty think block (no reasoning).
    pub enable_thinking: Option<bool>,
}

/// Renders `template` as Hugging Face does: Jinja with `trim_blocks` and `lstrip_blocks`, the
/// messages as `[{role, content}]`, `bos_token`/`eos_token`, `raise_exception(msg)` and Python's
/// string methods. A template that does not parse or fails to render is
/// [`Error::UnsupportedModel`]; one that raises (e.g. "roles must alternate") is
/// [`Error::InvalidArgument`] with its message.
pub fn render_template(
    template: &str,
    messages: &[ChatMessage],
    add_generation_prompt: bool,
    ctx: &TemplateContext,
) -> Result<String> {
    use minijinja::{context, Environment, Value};
    let mut env = Environment::new();
    // A template comes from the model file: bound its work (a chat of hundreds of turns uses a
    // few tens of thousands of instructions) so a hostile one cannot hang the page.
    env.set_fuel(Some(TEMPLATE_FUEL));
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function(
        "raise_exception",
        |msg: String| -> std::result::Result<Value, minijinja::Error> {
            Err(
                minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, RAISED)
                    .with_source(Raised(msg)),
            )
        },
    );
    let unsupported = |e: minijinja::Error| Error::UnsupportedModel {
        reason: format!("chat template: {e:#}"),
    };
    let tmpl = env.template_from_str(template).map_err(unsupported)?;
    let messages: Vec<Value> = messages
        .iter()
        .map(|m| context! { role => m.role, content => m.content })
        .collect();
    let mut vars = context! {
        messages => messages,
        add_generation_prompt => add_generation_prompt,
        bos_token => ctx.bos_token,
        eos_token => ctx.eos_token,
    };
    if let Some(on) = ctx.enable_thinking {
        vars = context! { enable_thinking => on, ..vars };
    }
    tmpl.render(vars).map_err(|e| match raised(&e) {
        Some(msg) => Error::InvalidArgument {
            op: "chat template",
            reason: msg.to_string(),
        },
        None => unsupported(e),
    })
}

const RAISED: &str = "raise_exception";

/// Instructions a template may execute in one render.
const TEMPLATE_FUEL: u64 = 5_000_000;

/// The message of a `raise_exception(msg)` call, carried as the error's source.
#[derive(Debug)]
struct Raised(String);

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Raised {}

fn raised(e: &minijinja::Error) -> Option<&str> {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(r) = s.downcast_ref::<Raised>() {
            return Some(&r.0);
        }
        source = s.source();
    }
    None
}
