//! Just enough JSON for a safetensors header: a parser into a small value tree and a string
//! writer. Nesting and list lengths are limited, and strings and numbers borrow from the text, so
//! hostile input can exhaust neither the stack nor memory (the tree takes at most about eight
//! times the header's size).

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::nn::params::first_repeated;

/// Deeper nesting than this is rejected (serde_json, which the reference implementation uses,
/// stops at 128 too). A valid header nests three levels.
const MAX_DEPTH: usize = 128;

/// Longer lists are rejected: a header's lists are tensor dims and byte ranges, and a list of
/// single-digit numbers would otherwise take sixteen times its text in memory.
const MAX_LIST: usize = 64;

/// A parsed JSON value. Numbers keep their text; the header only needs non-negative integers.
#[derive(Debug)]
pub(super) enum Json<'a> {
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
    Array(Vec<Json<'a>>),
    String(Cow<'a, str>),
    Number(&'a str),
    Null,
    /// `true` or `false`.
    Bool,
}

impl<'a> Json<'a> {
    /// The value as a `u64`, if it is a non-negative integer that fits.
    pub(super) fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(text) if text.bytes().all(|b| b.is_ascii_digit()) => text.parse().ok(),
            _ => None,
        }
    }

    /// The first key that an object holds more than once, if any.
    pub(super) fn repeated_key(&self) -> Option<&str> {
        let Json::Object(members) = self else { return None };
        first_repeated(members, |(key, _)| &**key).map(|(_, (key, _))| &**key)
    }

    /// The members of an object by key (so errors about them come in a fixed order), the last of
    /// each duplicated key winning: as the reference implementation reads a header's tensor
    /// names (into a map). Where it reads fields (a tensor's entry, `__metadata__`), a repeat is
    /// an error: see [`Json::repeated_key`].
    pub(super) fn into_members(self) -> Option<BTreeMap<Cow<'a, str>, Json<'a>>> {
        match self {
            Json::Object(members) => Some(members.into_iter().collect()),
            _ => None,
        }
    }
}

/// Parses `text` as one JSON value, with only whitespace around it.
pub(super) fn parse(text: &str) -> Result<Json<'_>, String> {
    let mut p = Parser {
        text,
        s: text.as_bytes(),
        pos: 0,
    };
    let value = p.value(0)?;
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(p.error("trailing characters after the header"));
    }
    Ok(value)
}

/// `s` as a JSON string literal, quotes included.
pub(super) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

struct Parser<'a> {
    text: &'a str,
    s: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn error(&self, what: &str) -> String {
        format!("{what} at byte {} of the header", self.pos)
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected `{}`", byte as char)))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json<'a>, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("JSON nested too deeply"));
        }
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Json::String),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => {
                for (word, value) in [("true", Json::Bool), ("false", Json::Bool), ("null", Json::Null)] {
                    if self.s[self.pos..].starts_with(word.as_bytes()) {
                        self.pos += word.len();
                        return Ok(value);
                    }
                }
                Err(self.error("expected a JSON value"))
            }
        }
    }

    /// Calls `item` for each element of a `{…}` or `[…]` list, separated by commas.
    fn list(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Result<(), String>,
    ) -> Result<(), String> {
        self.expect(open)?;
        if self.peek() == Some(close) {
            self.pos += 1;
            return Ok(());
        }
        loop {
            item(self)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(c) if c == close => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.error(&format!("expected `,` or `{}`", close as char))),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json<'a>, String> {
        let mut members = Vec::new();
        self.list(b'{', b'}', |p| {
            if p.peek() != Some(b'"') {
                return Err(p.error("expected a string key"));
            }
            let key = p.string()?;
            p.expect(b':')?;
            members.push((key, p.value(depth + 1)?));
            Ok(())
        })?;
        Ok(Json::Object(members))
    }

    fn array(&mut self, depth: usize) -> Result<Json<'a>, String> {
        let mut items = Vec::new();
        self.list(b'[', b']', |p| {
            if items.len() == MAX_LIST {
                return Err(p.error(&format!("a list of more than {MAX_LIST} values")));
            }
            items.push(p.value(depth + 1)?);
            Ok(())
        })?;
        Ok(Json::Array(items))
    }

    /// A number as JSON spells it: `-`? (`0` | a digit 1–9 and more digits), then optionally `.`
    /// and digits, then optionally `e`/`E`, a sign and digits.
    fn number(&mut self) -> Result<Json<'a>, String> {
        let start = self.pos;
        let digits = |p: &mut Self| {
            let from = p.pos;
            while p.s.get(p.pos).is_some_and(u8::is_ascii_digit) {
                p.pos += 1;
            }
            p.pos - from
        };
        if self.s.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        let leading_zero = self.s.get(self.pos) == Some(&b'0');
        let int = digits(self);
        let mut valid = int > 0 && !(leading_zero && int > 1);
        if self.s.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            valid &= digits(self) > 0;
        }
        if let Some(b'e' | b'E') = self.s.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.s.get(self.pos) {
                self.pos += 1;
            }
            valid &= digits(self) > 0;
        }
        let all: &'a str = self.text;
        let text = &all[start..self.pos];
        if valid {
            Ok(Json::Number(text))
        } else {
            Err(self.error(&format!("malformed number `{text}`")))
        }
    }

    /// A string literal starting at the current `"`, escapes decoded; borrowed when it has none.
    fn string(&mut self) -> Result<Cow<'a, str>, String> {
        self.pos += 1; // the opening quote
        let mut out: Option<String> = None;
        loop {
            let start = self.pos;
            while let Some(&b) = self.s.get(self.pos)
                && b != b'"'
                && b != b'\\'
                && b >= 0x20
            {
                self.pos += 1;
            }
            // Runs between ASCII delimiters of a `&str` are whole UTF-8 sequences.
            let text: &'a str = self.text;
            let run = &text[start..self.pos];
            match self.s.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(match out {
                        None => Cow::Borrowed(run),
                        Some(mut owned) => {
                            owned.push_str(run);
                            Cow::Owned(owned)
                        }
                    });
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let c = self.escape()?;
                    let owned = out.get_or_insert_with(String::new);
                    owned.push_str(run);
                    owned.push(c);
                }
                Some(_) => return Err(self.error("a control character in a string")),
                None => return Err(self.error("an unterminated string")),
            }
        }
    }

    /// The character of the escape after a backslash.
    fn escape(&mut self) -> Result<char, String> {
        let Some(&b) = self.s.get(self.pos) else {
            return Err(self.error("an unterminated escape"));
        };
        self.pos += 1;
        Ok(match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex4()?;
                if !(0xD800..0xDC00).contains(&high) {
                    return char::from_u32(high).ok_or_else(|| self.error("a lone low surrogate"));
                }
                if !self.s[self.pos..].starts_with(b"\\u") {
                    return Err(self.error("a lone high surrogate"));
                }
                self.pos += 2;
                let low = self.hex4()?;
                if !(0xDC00..0xE000).contains(&low) {
                    return Err(self.error("a high surrogate without its low half"));
                }
                char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)).expect("a valid pair")
            }
            _ => return Err(self.error("an unknown escape")),
        })
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self
            .s
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.error("a short \\u escape"))?;
        let text = std::str::from_utf8(digits).map_err(|_| self.error("a bad \\u escape"))?;
        let value = u32::from_str_radix(text, 16).map_err(|_| self.error("a bad \\u escape"))?;
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.error("a bad \\u escape"));
        }
        self.pos += 4;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_header_and_resolves_duplicates_to_the_last() {
        let json =
            parse(r#" {"a": {"x": [1, 20]}, "b": "\u00e9\ud83d\ude00\n", "a": -1.5e3, "c": [true, null]} "#)
                .unwrap();
        let members = json.into_members().unwrap();
        assert!(matches!(&members["a"], Json::Number("-1.5e3")));
        assert!(matches!(&members["b"], Json::String(s) if s == "é😀\n"));
        assert!(matches!(&members["c"], Json::Array(v) if matches!(v[..], [Json::Bool, Json::Null])));
        assert_eq!(Json::Number("18446744073709551615").as_u64(), Some(u64::MAX));
        assert_eq!(Json::Number("18446744073709551616").as_u64(), None);
        assert_eq!(Json::Number("8.0").as_u64(), None);
        // A string without escapes borrows from the text.
        assert!(matches!(
            parse(r#""plain""#).unwrap(),
            Json::String(Cow::Borrowed("plain"))
        ));
    }

    #[test]
    fn numbers_follow_the_json_grammar() {
        for good in ["0", "-0", "7", "10", "1.5", "-1.5e3", "2E+10", "3e-7", "1e999"] {
            assert!(matches!(parse(good), Ok(Json::Number(n)) if n == good), "{good}");
        }
        for bad in [
            "01", "-01", "00", "1.", "1.e5", ".5", "-", "1e", "1e+", "+1", "0x10",
        ] {
            assert!(parse(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn rejects_malformed_json_with_a_position() {
        for bad in [
            "",
            "{",
            "{\"a\"}",
            "{\"a\":1,}",
            "[1 2]",
            "{1:2}",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\x\"",
            "\"\u{1}\"",
            "01x",
            "-",
            "{} {}",
            "nul",
            "\"\\u12g4\"",
            "\"\\u+123\"",
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains("byte"), "{bad:?}: {err}");
        }
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 2), "]".repeat(MAX_DEPTH + 2));
        assert!(parse(&deep).unwrap_err().contains("nested too deeply"));
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn lists_are_bounded() {
        let list = |n: usize| format!("[{}]", vec!["0"; n].join(","));
        assert!(matches!(parse(&list(MAX_LIST)), Ok(Json::Array(v)) if v.len() == MAX_LIST));
        assert!(
            parse(&list(MAX_LIST + 1))
                .unwrap_err()
                .contains("more than 64 values")
        );
    }

    #[test]
    fn quote_round_trips_through_parse() {
        for s in ["plain", "0.weight", "q\"uote\\", "tab\tnul\u{0}", "é😀"] {
            assert!(
                matches!(parse(&quote(s)).unwrap(), Json::String(back) if back == s),
                "{s:?}"
            );
        }
    }
}
