//! Typing of plain scalars exactly as Helm does it, and as a YAML 1.2 core-schema reader would.
//!
//! Helm reads values through `sigs.k8s.io/yaml`, whose YAML step is a fork of go-yaml v2: YAML 1.1
//! resolution (`kubernetes-sigs/yaml:goyaml.v2/resolve.go`). Its rules, reproduced here:
//! - an exact-match table: `y Y yes Yes YES on On ON true True TRUE` → true, the `n/no/off/false`
//!   forms → false, `~ null Null NULL` and the empty string → null, `.inf`/`.nan` forms → floats;
//! - otherwise, when the first character is a digit or a sign, underscores are removed and Go's
//!   `strconv.ParseInt(s, 0, 64)` is tried (base prefixes `0x`, `0o`, `0b`, and a leading `0` for
//!   octal), then `ParseUint`, then a float when the text matches go-yaml's float pattern (this is
//!   why `08` is the float 8: it is not valid octal);
//! - a first character `.` tries a float;
//! - everything else is a string.
//!
//! The YAML 1.2 core schema (what most non-Go tools use) is narrower; `yaml11-scalar` warns where
//! the two disagree.

/// A typed scalar value.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
}

impl Scalar {
    pub fn type_name(&self) -> &'static str {
        match self {
            Scalar::Null => "null",
            Scalar::Bool(_) => "boolean",
            Scalar::Int(_) => "integer",
            Scalar::Float(_) => "float",
            Scalar::Str(_) => "string",
        }
    }

    /// The canonical plain spelling of a non-string value (what `yaml11-scalar` rewrites to).
    pub fn canonical(&self) -> Option<String> {
        match self {
            Scalar::Null => Some("null".into()),
            Scalar::Bool(b) => Some(b.to_string()),
            Scalar::Int(i) => Some(i.to_string()),
            Scalar::Float(f) if f.is_nan() => Some(".nan".into()),
            Scalar::Float(f) if f.is_infinite() => {
                Some(if *f > 0.0 { ".inf" } else { "-.inf" }.into())
            }
            Scalar::Float(f) => {
                let s = f.to_string();
                Some(if s.contains(['.', 'e', 'E']) {
                    s
                } else {
                    format!("{s}.0")
                })
            }
            Scalar::Str(_) => None,
        }
    }
}

/// Resolve a plain scalar as Helm (go-yaml v2) does.
pub fn helm(s: &str) -> Scalar {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Scalar::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "true" | "True" | "TRUE" => {
            return Scalar::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "false" | "False" | "FALSE" => {
            return Scalar::Bool(false);
        }
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Scalar::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Scalar::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Scalar::Float(f64::NAN),
        _ => {}
    }
    let first = s.as_bytes()[0];
    if first.is_ascii_digit() || first == b'+' || first == b'-' {
        let plain: String = s.chars().filter(|&c| c != '_').collect();
        if let Some(i) = go_parse_int(&plain) {
            return Scalar::Int(i);
        }
        if is_go_yaml_float(&plain)
            && let Some(f) = go_parse_float(&plain)
        {
            return Scalar::Float(f);
        }
        return Scalar::Str(s.to_string());
    }
    if first == b'.'
        && let Some(f) = go_parse_float(s)
    {
        return Scalar::Float(f);
    }
    Scalar::Str(s.to_string())
}

/// Resolve a plain scalar with the YAML 1.2 core schema.
pub fn yaml12(s: &str) -> Scalar {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Scalar::Null,
        "true" | "True" | "TRUE" => return Scalar::Bool(true),
        "false" | "False" | "FALSE" => return Scalar::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Scalar::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Scalar::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Scalar::Float(f64::NAN),
        _ => {}
    }
    let (sign, body) = match s.as_bytes()[0] {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => (1, s),
    };
    if !body.is_empty()
        && body.bytes().all(|b| b.is_ascii_digit())
        && let Ok(v) = body.parse::<i128>()
    {
        return Scalar::Int(sign * v);
    }
    if sign == 1 && std::ptr::eq(body, s) {
        if let Some(h) = s.strip_prefix("0x")
            && !h.is_empty()
            && let Ok(v) = i128::from_str_radix(h, 16)
        {
            return Scalar::Int(v);
        }
        if let Some(o) = s.strip_prefix("0o")
            && !o.is_empty()
            && let Ok(v) = i128::from_str_radix(o, 8)
        {
            return Scalar::Int(v);
        }
    }
    if is_go_yaml_float(s)
        && let Ok(f) = s.parse::<f64>()
    {
        return Scalar::Float(f);
    }
    Scalar::Str(s.to_string())
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`, go-yaml's `yamlStyleFloat`, which the
/// YAML 1.2 core schema's float pattern also is.
fn is_go_yaml_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat` for the forms go-yaml hands it: a value out of float64's range is an
/// error there (go-yaml then keeps the text as a string), not an infinity.
fn go_parse_float(s: &str) -> Option<f64> {
    if is_go_yaml_float(s) {
        s.parse::<f64>().ok().filter(|f| f.is_finite())
    } else {
        None
    }
}

/// The YAML core tags go-yaml v2 resolves a scalar against (`resolvableTag`).
fn resolvable(tag: &str) -> bool {
    matches!(tag, "str" | "bool" | "int" | "float" | "null" | "timestamp")
}

/// go-yaml v2 (`decode.go` `scalar` + `resolve.go` `resolve`) decoding one scalar into an
/// `interface{}`, the way Helm reads values: `plain` is false for quoted and block scalars, `tag`
/// is a core tag's short name (`int`, `binary`) or a local tag as written (`!foo`). Err is the
/// message go-yaml fails with (Helm refuses the file).
pub fn go_yaml(value: &str, plain: bool, tag: Option<&str>) -> Result<Scalar, String> {
    let Some(tag) = tag else {
        return Ok(if plain {
            helm(value)
        } else {
            Scalar::Str(value.to_string())
        });
    };
    if tag == "binary" {
        return decode_base64(value)
            .map(|bytes| Scalar::Str(go_string(&bytes)))
            .ok_or_else(|| "!!binary value contains invalid base64 data".to_string());
    }
    if !resolvable(tag) {
        // A local tag (`!foo`) or another core tag on a scalar: the text, as a string.
        return Ok(Scalar::Str(value.to_string()));
    }
    if tag == "str" {
        return Ok(Scalar::Str(value.to_string()));
    }
    let resolved = helm(value);
    let rtag = match &resolved {
        Scalar::Null => "null",
        Scalar::Bool(_) => "bool",
        Scalar::Int(_) => "int",
        Scalar::Float(_) => "float",
        Scalar::Str(_) if is_timestamp(value) => "timestamp",
        Scalar::Str(_) => "str",
    };
    if rtag == tag {
        return Ok(resolved);
    }
    if let (Scalar::Int(i), "float") = (&resolved, tag)
        && *i <= i64::MAX as i128
    {
        return Ok(Scalar::Float(*i as f64));
    }
    Err(format!(
        "cannot decode !!{rtag} `{value}` as a !!{tag} (go-yaml, which Helm reads values with, refuses it)"
    ))
}

/// go-yaml's timestamp test (`parseTimestamp`): four digits, a dash, then one of its layouts.
/// Only the shape is checked; the value becomes a string either way.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 8 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let date_end = s[5..]
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .map_or(s.len(), |i| i + 5);
    let parts: Vec<&str> = s[..date_end].split('-').collect();
    parts.len() == 3
        && parts[1].len() <= 2
        && parts[2].len() <= 2
        && !parts[1].is_empty()
        && !parts[2].is_empty()
        && date_end == s.len()
}

/// Go's `base64.StdEncoding.DecodeString`: padded standard alphabet; `\r` and `\n` are skipped.
pub fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let mut vals = Vec::with_capacity(s.len());
    let mut pad = 0;
    for b in s.bytes() {
        if b == b'\r' || b == b'\n' {
            continue;
        }
        if b == b'=' {
            pad += 1;
            vals.push(0);
            continue;
        }
        if pad > 0 {
            return None;
        }
        vals.push(match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        });
    }
    if vals.len() % 4 != 0 || pad > 2 {
        return None;
    }
    let mut out = Vec::with_capacity(vals.len() / 4 * 3);
    for c in vals.chunks(4) {
        let n = (u32::from(c[0]) << 18)
            | (u32::from(c[1]) << 12)
            | (u32::from(c[2]) << 6)
            | u32::from(c[3]);
        out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]);
    }
    out.truncate(out.len() - pad);
    Some(out)
}

/// Bytes as Go's encoding/json writes a string holding them: each byte that is not part of valid
/// UTF-8 becomes U+FFFD.
pub fn go_string(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let good = e.valid_up_to();
                out.push_str(std::str::from_utf8(&rest[..good]).unwrap_or_default());
                out.push('\u{fffd}');
                rest = &rest[good + 1..];
            }
        }
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)` falling back to `ParseUint(s, 0, 64)`, as go-yaml v2 calls
/// them: an optional sign, then `0x`/`0o`/`0b` prefixes or a leading `0` for octal.
fn go_parse_int(s: &str) -> Option<i128> {
    let (neg, body) = match s.as_bytes().first()? {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() {
        return None;
    }
    let lower = body.get(..2).map(str::to_ascii_lowercase);
    let (radix, digits) = match lower.as_deref() {
        Some("0x") => (16, &body[2..]),
        Some("0o") => (8, &body[2..]),
        Some("0b") => (2, &body[2..]),
        _ if body.len() > 1 && body.starts_with('0') => (8, &body[1..]),
        _ => (10, body),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let v = i128::from_str_radix(digits, radix).ok()?;
    let v = if neg { -v } else { v };
    // int64 range, or uint64 for positives without a sign (ParseUint's fallback).
    if v >= i64::MIN as i128
        && (v <= i64::MAX as i128 || (v <= u64::MAX as i128 && !s.starts_with('+')))
    {
        Some(v)
    } else {
        None
    }
}

/// Does a plain scalar read differently under YAML 1.1 (Helm) and the YAML 1.2 core schema, or
/// is it an integer with a leading zero (octal to Helm, decimal to most other readers)?
pub fn yaml11_disagreement(s: &str) -> bool {
    let h = helm(s);
    if let Scalar::Int(_) = h {
        let body = s.trim_start_matches(['+', '-']);
        let b = body.as_bytes();
        if b.len() > 1 && b[0] == b'0' && b[1].is_ascii_digit() {
            return true;
        }
    }
    let y = yaml12(s);
    match (&h, &y) {
        (Scalar::Float(a), Scalar::Float(b)) => !(a == b || (a.is_nan() && b.is_nan())),
        _ => h != y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Scalar::*;

    #[test]
    fn helm_types_every_yaml11_form() {
        let table: &[(&str, Scalar)] = &[
            ("y", Bool(true)),
            ("Y", Bool(true)),
            ("yes", Bool(true)),
            ("Yes", Bool(true)),
            ("YES", Bool(true)),
            ("on", Bool(true)),
            ("On", Bool(true)),
            ("ON", Bool(true)),
            ("true", Bool(true)),
            ("True", Bool(true)),
            ("TRUE", Bool(true)),
            ("n", Bool(false)),
            ("N", Bool(false)),
            ("no", Bool(false)),
            ("No", Bool(false)),
            ("NO", Bool(false)),
            ("off", Bool(false)),
            ("Off", Bool(false)),
            ("OFF", Bool(false)),
            ("false", Bool(false)),
            ("False", Bool(false)),
            ("FALSE", Bool(false)),
            ("yEs", Str("yEs".into())),
            ("tRUE", Str("tRUE".into())),
            ("~", Null),
            ("", Null),
            ("null", Null),
            ("Null", Null),
            ("NULL", Null),
            ("nULL", Str("nULL".into())),
            ("0x1F", Int(31)),
            ("0X1F", Int(31)),
            ("-0x1F", Int(-31)),
            ("0o17", Int(15)),
            ("0b101", Int(5)),
            ("017", Int(15)),
            ("01", Int(1)),
            ("03", Int(3)),
            ("00", Int(0)),
            ("08", Float(8.0)),
            ("09.5", Float(9.5)),
            ("1_000", Int(1000)),
            ("+1", Int(1)),
            ("-1", Int(-1)),
            ("0", Int(0)),
            ("1.5", Float(1.5)),
            ("1.0", Float(1.0)),
            ("1e3", Float(1000.0)),
            (".5", Float(0.5)),
            ("1.", Float(1.0)),
            ("18446744073709551615", Int(18446744073709551615)),
            ("99999999999999999999", Float(1e20)),
            ("1.2.3", Str("1.2.3".into())),
            ("v1.5.3", Str("v1.5.3".into())),
            ("1-2", Str("1-2".into())),
            ("0x", Str("0x".into())),
            ("preemptive", Str("preemptive".into())),
        ];
        for (input, want) in table {
            assert_eq!(&helm(input), want, "helm({input:?})");
        }
        assert!(matches!(helm(".inf"), Float(f) if f.is_infinite() && f > 0.0));
        assert!(matches!(helm("-.Inf"), Float(f) if f.is_infinite() && f < 0.0));
        assert!(matches!(helm(".NaN"), Float(f) if f.is_nan()));
    }

    #[test]
    fn yaml12_core_schema_is_narrower() {
        assert_eq!(yaml12("yes"), Str("yes".into()));
        assert_eq!(yaml12("On"), Str("On".into()));
        assert_eq!(yaml12("True"), Bool(true));
        assert_eq!(yaml12("01"), Int(1));
        assert_eq!(yaml12("1_000"), Str("1_000".into()));
        assert_eq!(yaml12("0x1F"), Int(31));
        assert_eq!(yaml12("0o17"), Int(15));
        assert_eq!(yaml12("0b101"), Str("0b101".into()));
        assert_eq!(yaml12("08"), Int(8));
        assert_eq!(yaml12("+1"), Int(1));
    }

    #[test]
    fn disagreements_are_the_yaml11_only_forms() {
        for s in [
            "yes", "On", "n", "no", "OFF", "Y", "03", "01", "08", "1_000", "0b1", "-07",
        ] {
            assert!(yaml11_disagreement(s), "{s} should be flagged");
        }
        for s in [
            "true", "False", "1", "0", "0x1F", "0o17", "+1", "1.5", "cgpu", "~", "", "v1.0.6",
        ] {
            assert!(!yaml11_disagreement(s), "{s} should not be flagged");
        }
    }

    #[test]
    fn canonical_forms() {
        assert_eq!(helm("On").canonical().unwrap(), "true");
        assert_eq!(helm("03").canonical().unwrap(), "3");
        assert_eq!(helm("08").canonical().unwrap(), "8.0");
        assert_eq!(helm("1_000").canonical().unwrap(), "1000");
    }
}
