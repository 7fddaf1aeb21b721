//! Where `post-render` holds its output until it knows the render may go to Helm: in memory up
//! to a fixed size, then in an anonymous temporary file. Memory stays bounded whatever the
//! stream's size, and the common case (a chart renders a few hundred KiB) never touches disk.

use std::fs::File;
use std::io::{self, Read, Seek, Write};

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

    /// Write everything held, in order, to `out`. When `out` is the process's stdout and the
    /// tail is in a file, std copies the file with copy_file_range/sendfile/splice.
    pub fn drain_into<W: Write>(self, out: &mut W) -> io::Result<()> {
        out.write_all(&self.memory)?;
        if let Some(w) = self.file {
            let mut f = w.into_inner().map_err(|e| e.into_error())?;
            f.seek(io::SeekFrom::Start(0))?;
            io::copy(&mut f, out)?;
        }
        Ok(())
    }

    /// Like [`Spill::drain_into`] for a writer behind `dyn`, in large blocks.
    pub fn drain_into_dyn(self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(&self.memory)?;
        if let Some(w) = self.file {
            let mut f = w.into_inner().map_err(|e| e.into_error())?;
            f.seek(io::SeekFrom::Start(0))?;
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                out.write_all(&buf[..n])?;
            }
        }
        Ok(())
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

    #[test]
    fn bytes_come_back_in_order_across_the_spill() {
        let mut s = Spill::with_limit(10);
        s.write_all(b"0123456").unwrap();
        s.write_all(b"789abc").unwrap();
        s.write_all(b"def").unwrap();
        let mut out = Vec::new();
        s.drain_into(&mut out).unwrap();
        assert_eq!(out, b"0123456789abcdef");
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
}
