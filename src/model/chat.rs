//! Chat prompt formatting (llama.cpp's built-in templates).

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
