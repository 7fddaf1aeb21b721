//! The `cgpu-lint` binary: parse the command line, run the command, map the outcome to an exit
//! status (0 clean, 1 findings or a changed file, 2 the tool could not do its job).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use cgpu_lint::app::{self, AppError, Streams};
use cgpu_lint::cli::{Cli, Command};

/// stdin as a file when it is a regular file (`post-render < rendered.yaml`), which
/// `post-render` may read twice instead of holding its output.
fn seekable_stdin() -> Option<std::fs::File> {
    use std::os::fd::AsFd;
    let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let file = std::fs::File::from(fd);
    file.metadata().ok()?.is_file().then_some(file)
}

/// Is stdin a pipe (what Helm hands a post-renderer)?
fn stdin_is_pipe() -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata("/dev/stdin").is_ok_and(|m| m.file_type().is_fifo())
    }
    #[cfg(not(unix))]
    {
        false
    }
}

fn main() -> ExitCode {
    let cli = match Cli::parse_args() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // clap exits 0 for --help/--version and 2 for usage errors, as we do.
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    // The language server owns stdin and stdout (the protocol's framing) for its whole life.
    if let Command::Server = cli.command {
        return match cgpu_lint::server::run_stdio() {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("cgpu-lint: error: server: {e}");
                ExitCode::from(2)
            }
        };
    }
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = stdout.lock();
    let mut err = stderr.lock();
    let mut streams = Streams {
        out: &mut out,
        err: &mut err,
        out_is_terminal: std::io::stdout().is_terminal(),
        err_is_terminal: std::io::stderr().is_terminal(),
        out_is_stdout: true,
        in_is_pipe: stdin_is_pipe(),
    };
    let result = app::run(&cli.command, &mut streams, || {
        (
            std::io::BufReader::with_capacity(1 << 20, std::io::stdin().lock()),
            seekable_stdin(),
        )
    });
    let flushed = streams.out.flush();
    match (result, flushed) {
        // A closed pipe (`cgpu-lint rules | head`) is not an error.
        (Err(AppError::Io(e)), _) | (Ok(_), Err(e))
            if e.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            ExitCode::SUCCESS
        }
        (Ok(exit), _) => ExitCode::from(exit.code()),
        (Err(e), _) => {
            let _ = writeln!(err, "cgpu-lint: error: {}", e.shown());
            ExitCode::from(2)
        }
    }
}
