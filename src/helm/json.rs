//! Values written as JSON byte for byte as Helm's `toJson` (Go's encoding/json) writes them:
//! keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped, every number read from YAML or JSON a
//! float64 (`3`, `1e+21`, `1e-7`), `--set` integers int64.

use crate::yaml::{Node, Scalar, Source, Value};

/// The whole tree as one line of JSON.
pub fn to_string(node: &Node) -> String {
    let mut out = String::new();
    write(node, &mut out);
    out
}

/// One scalar as JSON; `int64`: an integer set by `--set` (else a float64, as Helm reads YAML).
pub fn scalar(s: &Scalar, int64: bool, out: &mut String) {
    match s {
        Scalar::Null => out.push_str("null"),
        Scalar::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Scalar::Int(i) => {
            if int64 {
                out.push_str(&i.to_string());
            } else {
                out.push_str(&go_float64(*i as f64));
            }
        }
        Scalar::Float(f) => out.push_str(&go_float64(*f)),
        Scalar::Str(s) => string(s, out),
    }
}

fn write(node: &Node, out: &mut String) {
    match &node.value {
        Value::Scalar(s) => scalar(s, is_int64_source(&node.src), out),
        Value::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Map(entries) => {
            let mut sorted: Vec<_> = entries.iter().collect();
            sorted.sort_by(|a, b| a.key.as_bytes().cmp(b.key.as_bytes()));
            out.push('{');
            for (i, e) in sorted.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(&e.key, out);
                out.push(':');
                write(&e.value, out);
            }
            out.push('}');
        }
    }
}

/// encoding/json's string escaping with HTML escaping on (what `json.Marshal` does).
pub fn string(s: &str, out: &mut String) {
    const HEX: &[u8] = b"0123456789abcdef";
    out.push('"');
    for c in s.chars() {
        if let Some(e) = crate::yaml::emit::escape_common(c) {
            out.push_str(e);
            continue;
        }
        match c {
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' | '\0'..='\u{1f}' => {
                let n = c as u32;
                out.push_str("\\u");
                for shift in [12, 8, 4, 0] {
                    out.push(HEX[((n >> shift) & 0xf) as usize] as char);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `strconv.AppendFloat(f, 'f' or 'e', -1, 64)` as encoding/json chooses between them.
pub fn go_float64(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        if exp < 0 {
            format!("{mant}e-{}", -exp)
        } else {
            format!("{mant}e+{exp:02}")
        }
    } else {
        format!("{f}")
    }
}

/// `fmt.Sprint(f)` (`%v`: 'g' with the shortest digits, an exponent from 1e+06 on), the text
/// a template's `quote` or `{{ . }}` makes of a number from a values file.
pub fn go_sprint_float64(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    shortest_g(f, f == 0.0, f.is_sign_negative())
}

/// Go's `'g'` with the shortest digits for a finite number: `%e`'s mantissa with a two-digit
/// exponent outside 1e-4 ≤ |x| < 1e+06 (Go's `%v` and `FormatFloat(…, 'g', -1, …)` switch
/// there), the plain shortest form inside; `-0` keeps its sign.
fn shortest_g<T: std::fmt::LowerExp + std::fmt::Display>(
    x: T,
    zero: bool,
    negative: bool,
) -> String {
    if zero {
        return if negative { "-0" } else { "0" }.into();
    }
    let s = format!("{x:e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        format!("{x}")
    }
}

/// The text a template's `quote` (fmt's `%v`) makes of a scalar read from a values file, where
/// every number is a float64; `None` for null.
pub fn sprint(s: &Scalar) -> Option<String> {
    match s {
        Scalar::Null => None,
        Scalar::Bool(b) => Some(b.to_string()),
        Scalar::Int(i) => Some(go_sprint_float64(*i as f64)),
        Scalar::Float(f) => Some(go_sprint_float64(*f)),
        Scalar::Str(s) => Some(s.clone()),
    }
}

/// `strconv.FormatFloat(f, 'g', -1, 32)`, the string sigs.k8s.io/yaml makes of a float key.
pub fn go_format_g32(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    let x = f as f32;
    if x.is_infinite() {
        return if x > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    shortest_g(x, x == 0.0, x.is_sign_negative())
}

/// Does a leaf's number print as an int64 (set by `--set`) rather than the float64 Helm makes of
/// every number it reads from YAML or JSON?
pub fn is_int64_source(src: &Source) -> bool {
    src.name.starts_with("--set ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_fmt_sprint_writes_them() {
        assert_eq!(go_sprint_float64(3.0), "3");
        assert_eq!(go_sprint_float64(100000.0), "100000");
        assert_eq!(go_sprint_float64(1e6), "1e+06");
        assert_eq!(go_sprint_float64(1234567.0), "1.234567e+06");
        assert_eq!(go_sprint_float64(0.0001), "0.0001");
        assert_eq!(go_sprint_float64(0.00001), "1e-05");
        assert_eq!(go_sprint_float64(-0.0), "-0");
        assert_eq!(go_sprint_float64(1.5), "1.5");
    }

    #[test]
    fn floats_as_go_writes_them() {
        assert_eq!(go_float64(3.0), "3");
        assert_eq!(go_float64(1e21), "1e+21");
        assert_eq!(go_float64(1e20), "100000000000000000000");
        assert_eq!(go_float64(1e-7), "1e-7");
        assert_eq!(go_float64(0.000001), "0.000001");
        assert_eq!(go_float64(-1.5e-10), "-1.5e-10");
        assert_eq!(go_float64(1.8446744073709552e19), "18446744073709552000");
    }

    #[test]
    fn float_keys_as_float32_g() {
        assert_eq!(go_format_g32(1.5), "1.5");
        assert_eq!(go_format_g32(1e6), "1e+06");
        assert_eq!(go_format_g32(100000.0), "100000");
        assert_eq!(go_format_g32(0.00001), "1e-05");
        assert_eq!(go_format_g32(std::f64::consts::PI), "3.1415927");
    }

    #[test]
    fn html_and_control_characters_escaped() {
        let mut s = String::new();
        string("<a&b>\u{1}\u{2028}", &mut s);
        assert_eq!(s, "\"\\u003ca\\u0026b\\u003e\\u0001\\u2028\"");
    }
}
