//! Where `post-render` holds its output until it knows the render may go to Helm: in memory up
//! to a fixed size, then in an anonymous temporary file. Memory stays bounded whatever the
//! stream's size, and the common case (a chart renders a few hundred KiB) never touches disk.

use std::fs::File;
use std::io::{self, Read, Seek, Write};

/// Read `reader` to its end, stopping one byte past `limit` (a device, a FIFO or a /proc file
/// has no size to check first, and `/dev/zero` never ends): `Ok(None)` when it holds more than
/// `limit` bytes.
pub fn read_at_most(reader: impl Read, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    reader.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
    Ok((buf.len() as u64 <= limit).then_some(buf))
}

/// [`read_at_most`] of the file at `path` (symbolic links followed; a FIFO is read as it comes).
pub fn read_file_at_most(path: &std::path::Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    read_at_most(File::open(path)?, limit)
}

/// [`read_file_at_most`] as UTF-8 text: over the limit or not UTF-8 is an error naming
/// `what` (the limit's name).
pub fn read_text_at_most(path: &std::path::Path, limit: u64, what: &str) -> io::Result<String> {
    let bytes = read_file_at_most(path, limit)?.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("over the {limit}-byte limit ({what})"),
        )
    })?;
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Bytes held in memory before the rest goes to a temporary file.
pub const MEMORY_LIMIT: usize = 4 * 1024 * 1024;

pub struct Spill {
    memory: Vec<u8>,
    file: Option<io::BufWriter<File>>,
    limit: usize,
}

impl Spill {
    pub fn new() -> Self {
        Self::with_limit(MEMORY_LIMIT)
    }

    pub fn with_limit(limit: usize) -> Self {
        Spill {
            memory: Vec::new(),
            file: None,
            limit,
        }
    }

    /// Write everything held, in order, to the file descriptor `out` (stdout: Helm's pipe, or
    /// a file). The spilled tail is copied by the kernel (`sendfile`: into a pipe it passes page
    /// references, into a file it copies once), not read into the process and written again.
    /// std's `io::copy` does not `sendfile` into a pipe, since a file's pages could change after
    /// being queued; this file is the process's own, unlinked and never written again.
    pub fn drain_into(self, out: &mut File) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        out.write_all(&self.memory)?;
        let Some(mut f) = Self::tail(self.file)? else {
            return Ok(());
        };
        let mut sent = 0u64;
        loop {
            // SAFETY: two open file descriptors this function borrows; a null offset makes
            // sendfile read from (and move) `f`'s own position.
            let n = unsafe {
                libc::sendfile(
                    out.as_raw_fd(),
                    f.as_raw_fd(),
                    std::ptr::null_mut(),
                    1 << 30,
                )
            };
            match n {
                0 => return Ok(()),
                n if n > 0 => sent += n as u64,
                _ => {
                    let e = io::Error::last_os_error();
                    match e.raw_os_error() {
                        Some(libc::EINTR) => {}
                        // A descriptor sendfile cannot write to: copy in blocks instead, from
                        // where it stopped (`f`'s position).
                        Some(libc::EINVAL | libc::ENOSYS) if sent == 0 => {
                            return copy_blocks(&mut f, out);
                        }
                        _ => return Err(e),
                    }
                }
            }
        }
    }

    /// Like [`Spill::drain_into`] for any writer (a test's buffer, `--output`), in large blocks.
    pub fn drain_into_dyn(self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(&self.memory)?;
        match Self::tail(self.file)? {
            Some(mut f) => copy_blocks(&mut f, out),
            None => Ok(()),
        }
    }

    /// The spilled tail, flushed and read from its start.
    fn tail(file: Option<io::BufWriter<File>>) -> io::Result<Option<File>> {
        let Some(w) = file else {
            return Ok(None);
        };
        let mut f = w.into_inner().map_err(|e| e.into_error())?;
        f.seek(io::SeekFrom::Start(0))?;
        Ok(Some(f))
    }
}

/// The rest of `f` to `out`, a MiB at a time.
fn copy_blocks(f: &mut File, out: &mut (impl Write + ?Sized)) -> io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match f.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Ok(());
        }
        out.write_all(&buf[..n])?;
    }
}

impl Default for Spill {
    fn default() -> Self {
        Self::new()
    }
}

impl Write for Spill {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.file.is_none() && self.memory.len() + buf.len() <= self.limit {
            self.memory.extend_from_slice(buf);
            return Ok(buf.len());
        }
        if self.file.is_none() {
            self.file = Some(io::BufWriter::with_capacity(1 << 20, tempfile::tempfile()?));
        }
        self.file.as_mut().expect("just set").write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

/// Make the pipe on `fd` (stdin from Helm, stdout to it) hold 1 MiB instead of the kernel's
/// default 64 KiB, when it is a pipe: a 64 MiB stream then crosses it in 64 round trips between
/// writer and reader instead of a thousand (reading it took 130 ms through the default pipe,
/// 60 ms through this one, on the bench machine). Anything else, and any refusal (a pipe-size
/// limit), leaves it as it is.
pub fn widen_pipe(fd: std::os::fd::BorrowedFd<'_>) {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::File::from(match fd.try_clone_to_owned() {
        Ok(owned) => owned,
        Err(_) => return,
    })
    .metadata() else {
        return;
    };
    if meta.file_type().is_fifo() {
        // SAFETY: fcntl on a descriptor the caller lends; F_SETPIPE_SZ only sizes its buffer.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
    }
}

/// A regular file mapped read-only into memory, so that post-render searches its bytes where the
/// kernel keeps them instead of copying them into the process first (a `read` of the whole
/// stream cost as much as `cat`'s whole copy). The file must not shrink while it is mapped (a
/// page past its new end would stop the process with SIGBUS): post-render maps only its stdin,
/// a file the shell opened for it, and copies it with `copy_file_range` afterwards anyway.
pub struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

impl Mapped {
    /// Map `file` whole; `None` when it is empty or the system refuses (the caller reads it).
    pub fn new(file: &File) -> Option<Mapped> {
        use std::os::fd::AsRawFd;
        let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
        if len == 0 {
            return None;
        }
        // SAFETY: a fresh read-only shared mapping of an open file descriptor, at an address the
        // kernel chooses; the result is checked before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: advice about the mapping just made; failing is harmless.
        unsafe { libc::madvise(ptr, len, libc::MADV_SEQUENTIAL) };
        Some(Mapped { ptr, len })
    }

    /// About to read `range`: map its pages at once rather than taking a fault every few
    /// (`MADV_POPULATE_READ`, Linux 5.14; elsewhere the faults happen as before).
    pub fn ahead(&self, range: std::ops::Range<usize>) {
        let (from, to) = (page_floor(range.start), range.end.min(self.len));
        if from < to {
            // SAFETY: advice about pages inside the mapping; failing is harmless.
            unsafe { libc::madvise(self.ptr.byte_add(from), to - from, libc::MADV_POPULATE_READ) };
        }
    }

    /// Done with the bytes before `end`: unmap their pages from the process (they stay in the
    /// page cache), so that resident memory does not grow with the stream.
    pub fn done_before(&self, end: usize) {
        let to = page_floor(end.min(self.len));
        if to > 0 {
            // SAFETY: a read-only shared file mapping: MADV_DONTNEED only drops the page table
            // entries, and a later read maps the file's pages again.
            unsafe { libc::madvise(self.ptr, to, libc::MADV_DONTNEED) };
        }
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` is a live read-only mapping of `len` bytes until `drop`.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

fn page_floor(n: usize) -> usize {
    n & !4095
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `new` made; no slice of it outlives `self`.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a spill holds comes back whole and in order, through a buffer, into a file
    /// (sendfile) and into a pipe (sendfile; std would not), across the memory limit.
    #[test]
    fn bytes_come_back_in_order_across_the_spill() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let fill = |limit: usize| {
            let mut s = Spill::with_limit(limit);
            for piece in data.chunks(65_537) {
                s.write_all(piece).unwrap();
            }
            s
        };
        for limit in [0, 10, 1 << 20, 1 << 30] {
            let mut out = Vec::new();
            fill(limit).drain_into_dyn(&mut out).unwrap();
            assert!(out == data, "buffer, limit {limit}");
            let mut file = tempfile::tempfile().unwrap();
            fill(limit).drain_into(&mut file).unwrap();
            file.seek(io::SeekFrom::Start(0)).unwrap();
            let mut back = Vec::new();
            file.read_to_end(&mut back).unwrap();
            assert!(back == data, "file, limit {limit}");
            let (mut reader, writer) = std::io::pipe().unwrap();
            let reading = std::thread::spawn(move || {
                let mut back = Vec::new();
                reader.read_to_end(&mut back).unwrap();
                back
            });
            let mut writer = File::from(std::os::fd::OwnedFd::from(writer));
            fill(limit).drain_into(&mut writer).unwrap();
            drop(writer);
            assert!(reading.join().unwrap() == data, "pipe, limit {limit}");
        }
    }

    #[test]
    fn small_outputs_stay_in_memory() {
        let mut s = Spill::with_limit(1024);
        s.write_all(b"hello").unwrap();
        assert!(s.file.is_none());
        let mut out = Vec::new();
        s.drain_into_dyn(&mut out).unwrap();
        assert_eq!(out, b"hello");
    }

    /// A pipe is widened to 1 MiB (what `F_GETPIPE_SZ` then says); a file is left alone.
    #[test]
    fn pipes_are_widened_and_files_left_alone() {
        use std::os::fd::{AsFd, AsRawFd};
        let (reader, writer) = std::io::pipe().unwrap();
        for end in [reader.as_fd(), writer.as_fd()] {
            widen_pipe(end);
            // SAFETY: F_GETPIPE_SZ reads the size of a pipe this test owns.
            assert_eq!(
                unsafe { libc::fcntl(end.as_raw_fd(), libc::F_GETPIPE_SZ) },
                1 << 20
            );
        }
        let file = tempfile::tempfile().unwrap();
        widen_pipe(file.as_fd());
        // SAFETY: as above, on a file: the kernel refuses it.
        assert_eq!(
            unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETPIPE_SZ) },
            -1
        );
    }
}
