//! Shell words: how a name from input is written into a command a shell runs (the script's
//! variables, the kubectl commands markdown and JSON show), so that nothing inside it expands.

/// One shell word holding `s` exactly: nothing inside is expanded. `shlex` (a maintained crate)
/// does the quoting; it refuses only a NUL byte, which a shell word cannot hold and which no
/// validated name contains, so a NUL is dropped rather than failing the whole script.
pub fn quote(s: &str) -> String {
    let clean: String;
    let s = if s.contains('\0') {
        clean = s.replace('\0', "");
        &clean
    } else {
        s
    };
    match shlex::try_quote(s) {
        // shlex leaves a word of only safe characters bare; single quotes around it change
        // nothing for the shell and show a reviewer at a glance that it is one word.
        Ok(q) if q == s => format!("'{s}'"),
        Ok(q) => q.into_owned(),
        Err(_) => "''".into(),
    }
}
