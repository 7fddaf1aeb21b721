//! Command-line cases as data (typos' `tests/cmd/` is the model): each `tests/cmd/NAME.toml`
//! gives the arguments, stdin, the exact expected stdout/stderr and the exit status; `NAME.in/`
//! holds the inputs and is the working directory. A new case is files, not code.

#[test]
fn cli_cases() {
    trycmd::TestCases::new().case("tests/cmd/*.toml");
}
