//! The README's "Use it" example is `examples/readme.rs` (which CI builds with every example),
//! word for word: the README cannot show code that does not compile.

#[test]
fn the_readme_example_is_the_readme_example_program() {
    let readme = include_str!("../../README.md");
    let start = readme.find("```rust\n").expect("the README has a Rust block") + "```rust\n".len();
    let block = &readme[start..];
    let shown = &block[..block.find("```").expect("the block ends")];
    let program = include_str!("../examples/readme.rs");
    let code = program
        .lines()
        .skip_while(|l| l.starts_with("//!") || l.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        code.trim_end(),
        shown.trim_end(),
        "README.md's example and examples/readme.rs differ"
    );
}
