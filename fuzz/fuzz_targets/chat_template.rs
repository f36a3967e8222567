//! Fuzzes the chat-template renderer: a template comes from the model file, so any source must
//! render or fail with a typed error — never panic, and never run unbounded (the renderer's fuel
//! limit stops a template that loops too long).
#![no_main]

use kopitiam_wasm::model::chat::{render_template, ChatMessage, TemplateContext};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let template = String::from_utf8_lossy(data);
    let messages = [
        ChatMessage::new("system", "You are terse."),
        ChatMessage::new("user", "Hi {{ there }} {% raw %}"),
        ChatMessage::new("assistant", "<think>\n</think>\nHello"),
    ];
    let ctx = TemplateContext {
        bos_token: "<s>",
        eos_token: "</s>",
        enable_thinking: Some(false),
    };
    if let Err(e) = render_template(&template, &messages, true, &ctx) {
        assert!(
            matches!(e.code(), "UnsupportedModel" | "InvalidArgument"),
            "{e:?}"
        );
    }
});
