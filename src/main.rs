//! The `cgpu-lint` binary: parse the command line, run the command, map the outcome to an exit
//! status (0 clean, 1 findings or a changed file, 2 the tool could not do its job).

use std::io::Write;
use std::process::ExitCode;

use cgpu_lint::app::{self, AppError, Exit, Streams};
use cgpu_lint::cli::{Cli, Command};

fn run(cli: Cli, s: &mut Streams) -> Result<Exit, AppError> {
    match &cli.command {
        Command::Check(args) => app::check(s, args),
        Command::PostRender(args) => app::post_render(
            s,
            args,
            std::io::BufReader::with_capacity(1 << 20, std::io::stdin().lock()),
            seekable_stdin(),
        ),
        Command::Checklist(args) => app::checklist(s, args),
        Command::Fix(args) => app::fix(s, args),
        Command::Set(args) => app::set(s, args),
        Command::Generate(args) => app::generate(s, args),
        Command::Values(args) => cgpu_lint::helm::command::values(s, args),
        Command::Schema => app::schema(s),
        Command::Rules(args) => app::rules(s, args),
        Command::Explain { rule } => app::explain(s, rule),
        Command::Completions { shell } => {
            clap_complete::generate(*shell, &mut Cli::command_tree(), "cgpu-lint", s.out);
            Ok(Exit::Clean)
        }
        // `main` runs the server before taking the streams; nothing to do here.
        Command::Server => Ok(Exit::Clean),
        Command::Man { out: None } => {
            clap_mangen::Man::new(Cli::command_tree()).render(s.out)?;
            Ok(Exit::Clean)
        }
        Command::Man { out: Some(dir) } => {
            let failed = |e: std::io::Error| AppError::Usage(format!("{}: {e}", dir.display()));
            std::fs::create_dir_all(dir).map_err(failed)?;
            clap_mangen::generate_to(Cli::command_tree(), dir).map_err(failed)?;
            let mut pages: Vec<_> = std::fs::read_dir(dir)
                .map_err(failed)?
                .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .filter(|n| n.starts_with("cgpu-lint") && n.ends_with(".1"))
                .collect();
            pages.sort();
            writeln!(
                s.err,
                "cgpu-lint: wrote {} man pages to {}",
                pages.len(),
                dir.display()
            )?;
            Ok(Exit::Clean)
        }
    }
}

/// stdin as a file when it is a regular file (`post-render < rendered.yaml`), which
/// `post-render` may read twice instead of holding its output.
fn seekable_stdin() -> Option<std::fs::File> {
    use std::os::fd::AsFd;
    let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let file = std::fs::File::from(fd);
    file.metadata().ok()?.is_file().then_some(file)
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
        out_is_terminal: app::stdout_is_terminal(),
        out_is_stdout: true,
        in_is_pipe: app::stdin_is_pipe(),
    };
    let result = run(cli, &mut streams);
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
            let _ = writeln!(err, "cgpu-lint: error: {e}");
            ExitCode::from(2)
        }
    }
}
