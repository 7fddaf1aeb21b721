//! The byte scans that keep post-render near `cat`: each passes over a document's
//! bytes once, testing every byte for everything it looks for, in vector registers (AVX2 where
//! the processor has it, chosen at run time; otherwise the baseline's SSE2 or the target's
//! own vectors, as the compiler vectorises the same loop).

/// Bytes tested per step.
const W: usize = 32;

/// What [`line_start`] found: the first line start `q` with its `\n` at `at` or later whose
/// first byte is `-` or `.` (a `---` or `...` line may start there), and, on the way, whether
/// the bytes from `at` to `checked` hold anything [`may_need_parsing`] looks for (`trigger`: a
/// superset, as there). `checked` is at least `q` when `q` was found (the block holding `q` is
/// checked whole, so it may pass `q`); bytes too near the end of `buf` to be tested for the
/// whole suffix are left to the caller ([`may_need_parsing`] on them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Found {
    pub(super) at: Option<usize>,
    pub(super) checked: usize,
    pub(super) trigger: bool,
}

/// [`Found`] from `at` on: one pass that looks for both (a prefilter's own pass over each
/// document cost as much as the search for line starts).
pub(super) fn line_start(buf: &[u8], at: usize) -> Found {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2 (checked just above).
        return unsafe { line_start_avx2(buf, at) };
    }
    line_start_in(buf, at)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn line_start_avx2(buf: &[u8], at: usize) -> Found {
    line_start_in(buf, at)
}

#[inline(always)]
fn line_start_in(buf: &[u8], at: usize) -> Found {
    const LAST: usize = SUFFIX.len() - 1;
    let mut i = at;
    let mut trigger = false;
    let mut checked = at;
    while let Some(b) = buf.get(i..).and_then(<[u8]>::first_chunk::<{ W + LAST }>) {
        let mut any = false;
        let mut t = false;
        for j in 0..W {
            let c = b[j];
            any |= (c == b'\n') & ((b[j + 1] == b'-') | (b[j + 1] == b'.'));
            t |= (c == b'\\')
                | (c == b'%')
                | (c == b'!')
                | ((c == SUFFIX[0]) & (b[j + 1] == SUFFIX[1]) & (b[j + LAST] == SUFFIX[LAST]));
        }
        trigger |= t;
        checked = i + W;
        if any {
            break;
        }
        i += W;
    }
    let at = buf.get(i..).and_then(|rest| {
        rest.windows(2)
            .position(|p| p[0] == b'\n' && matches!(p[1], b'-' | b'.'))
            .map(|k| i + k + 1)
    });
    Found {
        at,
        checked: checked.max(at.unwrap_or(0)).min(buf.len()),
        trigger: trigger || at.is_some_and(|q| q > checked && may_need_parsing(&buf[checked..q])),
    }
}

/// The installer names' common suffix, which [`super::split::mentions_installer`] looks for first.
pub(super) const SUFFIX: &[u8; 10] = b"-installer";

/// Could `chunk` need parsing: does it hold a `\`, `%` or `!` (what
/// [`super::split::may_spell_installer`] looks for) or [`SUFFIX`] (which every installer name
/// ends with)? A superset of both, in one pass: a block with a `-`, an `i` after it and an
/// `r` eight bytes on counts as holding the suffix.
pub(super) fn may_need_parsing(chunk: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2 (checked just above).
        return unsafe { may_need_parsing_avx2(chunk) };
    }
    may_need_parsing_in(chunk)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn may_need_parsing_avx2(chunk: &[u8]) -> bool {
    may_need_parsing_in(chunk)
}

#[inline(always)]
fn may_need_parsing_in(chunk: &[u8]) -> bool {
    const LAST: usize = SUFFIX.len() - 1;
    let mut i = 0;
    while let Some(b) = chunk.get(i..).and_then(<[u8]>::first_chunk::<{ W + LAST }>) {
        let mut any = false;
        for j in 0..W {
            let c = b[j];
            any |= (c == b'\\')
                | (c == b'%')
                | (c == b'!')
                | ((c == SUFFIX[0]) & (b[j + 1] == SUFFIX[1]) & (b[j + LAST] == SUFFIX[LAST]));
        }
        if any {
            return true;
        }
        i += W;
    }
    let tail = &chunk[i..];
    memchr::memchr3(b'\\', b'%', b'!', tail).is_some()
        || memchr::memmem::find(tail, SUFFIX).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bytes the scans look for, their neighbours, and the suffix whole.
    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            prop::sample::select(b"\n-.\\%!irx \r#".to_vec()).prop_map(|b| vec![b]),
            Just(SUFFIX.to_vec()),
            Just(b"\n---\n".to_vec()),
            Just(b"-i-------r".to_vec()),
        ];
        prop::collection::vec(piece, 0..80).prop_map(|p| p.concat())
    }

    fn line_start_naive(buf: &[u8], at: usize) -> Option<usize> {
        (at..buf.len().saturating_sub(1))
            .find(|&i| buf[i] == b'\n' && matches!(buf[i + 1], b'-' | b'.'))
            .map(|i| i + 1)
    }

    #[test]
    fn every_installer_name_ends_with_the_suffix() {
        for name in crate::cgpu::INSTALLER_NAMES {
            assert!(name.as_bytes().ends_with(SUFFIX), "{name}");
        }
    }

    /// Each thing the prefilter looks for, alone at every place of a long chunk, is seen.
    #[test]
    fn the_prefilter_sees_each_trigger_anywhere() {
        for len in [0, 1, 40, 41, 100, 200] {
            assert!(!may_need_parsing(&vec![b'x'; len]) && !may_need_parsing_in(&vec![b'x'; len]));
            let triggers: [&[u8]; 4] = [b"\\", b"%", b"!", SUFFIX];
            for t in triggers {
                for at in 0..=len.saturating_sub(t.len()) {
                    let mut chunk = vec![b'x'; len.max(t.len())];
                    chunk[at..at + t.len()].copy_from_slice(t);
                    assert!(may_need_parsing(&chunk), "{len} {at} {t:?}");
                    assert!(may_need_parsing_in(&chunk), "{len} {at} {t:?}");
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Both builds of the scan (AVX2 where the machine has it, and the plain loop) find
        /// exactly the line starts a byte-by-byte search finds, from every position, and flag
        /// every trigger among the bytes they say they tested (and nothing without a byte the
        /// prefilter looks for).
        #[test]
        fn line_start_is_the_first_dash_or_dot_line(buf in bytes()) {
            for at in 0..=buf.len() {
                let want = line_start_naive(&buf, at);
                for got in [line_start(&buf, at), line_start_in(&buf, at)] {
                    prop_assert_eq!(got.at, want, "at {}", at);
                    prop_assert!(at.min(buf.len()) <= got.checked && got.checked <= buf.len());
                    prop_assert!(want.is_none_or(|q| q <= got.checked), "{:?} at {}", got, at);
                    let tested = &buf[at.min(buf.len())..got.checked];
                    let needs = memchr::memchr3(b'\\', b'%', b'!', tested).is_some()
                        || memchr::memmem::find(tested, SUFFIX).is_some();
                    prop_assert!(!needs || got.trigger, "{:?} at {}", got, at);
                    let after = &buf[at.min(buf.len())..];
                    let dashless = !after.iter().any(|b| matches!(b, b'\\' | b'%' | b'!' | b'-'));
                    prop_assert!(!dashless || !got.trigger, "{:?} at {}", got, at);
                }
            }
        }

        /// A chunk with a `\`, `%`, `!` or the suffix is never passed over, and one without
        /// a `\`, `%`, `!` or `-` always is.
        #[test]
        fn the_prefilter_passes_over_only_what_needs_no_parsing(buf in bytes()) {
            let needs = memchr::memchr3(b'\\', b'%', b'!', &buf).is_some()
                || memchr::memmem::find(&buf, SUFFIX).is_some();
            let dashless = !buf.iter().any(|b| matches!(b, b'\\' | b'%' | b'!' | b'-'));
            for got in [may_need_parsing(&buf), may_need_parsing_in(&buf)] {
                prop_assert!(!needs || got);
                prop_assert!(!dashless || !got);
            }
        }
    }
}
