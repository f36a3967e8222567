//! Each fixture's own chat template (`tokenizer.chat_template`, Jinja) rendered for the
//! conversation of its chat prompt and tokenized: the ids must equal llama.cpp's for that
//! prompt, which was written in the model's documented format — so one BOS, the special tokens
//! parsed, and the template's own quirks (Qwen 3's empty think block, Phi-3's `<s>`) intact.

mod common;

use common::json_ids;
use kopitiam_wasm::gguf::GgufFile;
use kopitiam_wasm::model::chat::{render_template, ChatFormat, ChatMessage, TemplateContext};
use kopitiam_wasm::model::tokenizer_from_gguf;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

fn conversation(system: bool) -> Vec<ChatMessage> {
    let mut m = Vec::new();
    if system {
        m.push(ChatMessage::new("system", "You are a helpful assistant."));
    }
    m.push(ChatMessage::new("user", "What is the capital of France?"));
    m
}

/// Ids of prompt 1 (the chat prompt) of a fixture's reference.
fn chat_reference(reference: &str) -> Vec<u32> {
    let v: serde_json::Value = serde_json::from_str(reference).unwrap();
    json_ids(&v[1]["tokens"])
}

fn check(gguf: &[u8], reference: &str, system: bool, thinking: Option<bool>) {
    let g = GgufFile::parse(gguf).unwrap();
    let tok = tokenizer_from_gguf(&g).unwrap();
    let chat = ChatFormat::new(&g, &tok);
    assert!(chat.has_template());
    let ids = chat.tokens(&conversation(system), true, thinking).unwrap();
    assert_eq!(ids, chat_reference(reference));
}

#[test]
fn qwen3_template_with_thinking_off() {
    check(
        include_bytes!("fixtures/tiny-qwen3/tiny-qwen3-q4_0.gguf"),
        include_str!("fixtures/tiny-qwen3/reference.json"),
        true,
        Some(false),
    );
}

#[test]
fn qwen_template_default_thinking() {
    check(
        include_bytes!("fixtures/tiny-qwen2/tiny-qwen2-q4_0.gguf"),
        include_str!("fixtures/tiny-qwen2/reference.json"),
        true,
        None,
    );
}

#[test]
fn phi3_template_writes_bos_once() {
    check(
        include_bytes!("fixtures/tiny-phi3/tiny-phi3-q4_0.gguf"),
        include_str!("fixtures/tiny-phi3/reference.json"),
        false,
        None,
    );
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn llama3_template_writes_bos_once() {
    let names = ["tiny-llama3-q4_0.gguf", "reference.json"];
    let Some([gguf, reference]) = common::shared_files("fixtures/tiny-llama3", names) else {
        return;
    };
    check(&gguf, std::str::from_utf8(&reference).unwrap(), true, None);
}

#[test]
fn a_file_without_template_uses_the_gemma_format() {
    let gguf = include_bytes!("fixtures/tiny-gemma3/tiny-gemma3-q4_0.gguf");
    let g = GgufFile::parse(gguf).unwrap();
    let tok = tokenizer_from_gguf(&g).unwrap();
    let chat = ChatFormat::new(&g, &tok);
    assert!(!chat.has_template());
    let text = chat.render(&conversation(false), true, None).unwrap();
    assert_eq!(
        text,
        "<start_of_turn>user\nWhat is the capital of France?<end_of_turn>\n<start_of_turn>model\n"
    );
}

#[test]
fn template_errors_are_typed() {
    let ctx = TemplateContext::default();
    let msgs = conversation(false);
    let raised = render_template(
        "{% if messages[0]['role'] != 'system' %}{{ raise_exception('a system message first') }}{% endif %}",
        &msgs,
        true,
        &ctx,
    )
    .unwrap_err();
    assert_eq!(raised.code(), "InvalidArgument");
    assert!(
        raised.to_string().contains("a system message first"),
        "{raised}"
    );
    // A template is untrusted input (it comes with the file): 10^8 iterations run out of fuel.
    let endless = "{% for i in range(10000) %}{% for j in range(10000) %}x{% endfor %}{% endfor %}";
    let e = render_template(endless, &msgs, true, &ctx).unwrap_err();
    assert_eq!(e.code(), "UnsupportedModel");
    assert!(e.to_string().contains("fuel"), "{e}");
    let broken = render_template("{% for m in messages %}", &msgs, true, &ctx).unwrap_err();
    assert_eq!(broken.code(), "UnsupportedModel");
    // trim_blocks as Hugging Face renders (the newline after every block tag goes, also after
    // `{% endif %}`; the indentation before `{{` stays) and Python string methods.
    let t = "{% for m in messages %}\n  {{ m.content.strip().upper() }}|{% if m.content.startswith('What') %}yes{% endif %}\n{% endfor %}";
    assert_eq!(
        render_template(t, &msgs, false, &ctx).unwrap(),
        "  WHAT IS THE CAPITAL OF FRANCE?|yes"
    );
}
