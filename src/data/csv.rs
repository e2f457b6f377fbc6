//! Reading and writing datasets as CSV: one sample a line, the label then the 64 pixel values.
//!
//! The layout is `label,p0,p1,…,p63`: the label an integer in `0..=9`, the pixels row-major
//! numbers in `[0, 1]`, separated by commas (spaces around a field are ignored). Other layouts of
//! 8×8 digits, such as UCI's `optdigits` files (64 counts in `0..=16`, then the label), are read
//! with a [`CsvLayout`] ([`read_csv_with`]). The first line may be a header: it is one when none
//! of its fields is a number (so a first data row with a bad label is an error, not a header
//! skipped). Blank lines at the end, `\r\n` line ends and a UTF-8 byte-order mark are accepted.
//!
//! Bad input is rejected whole, with an [`Error::Data`] whose `location` is `file:line` and whose
//! message says what was wrong; nothing is half-loaded. No input makes these functions panic.

use std::fmt::Write as _;
use std::path::Path;

use super::digits::{CLASSES, Dataset, FEATURES};
use crate::error::{Error, Result};

/// The number of comma-separated fields on a data line: the label and the pixels.
const COLUMNS: usize = FEATURES + 1;

/// Where a CSV line's label is and what range its pixels are in, for [`read_csv_with`] and
/// [`parse_csv_with`]. Pixels in `[0, pixel_max]` are divided by `pixel_max`, so the dataset's
/// are in `[0, 1]` as [`Dataset`] holds them.
///
/// ```
/// use teenygrad::data::{CsvLayout, parse_csv_with};
///
/// // UCI's optdigits: 64 counts of ink in 0..=16, then the label.
/// let line = format!("{}7\n", "16,".repeat(32) + &"4,".repeat(32));
/// let data = parse_csv_with(&line, "optdigits.tra", CsvLayout::UCI_OPTDIGITS)?;
/// assert_eq!(data.labels, vec![7]);
/// assert_eq!((data.images[0][0], data.images[0][63]), (1.0, 0.25));
///
/// let layout = CsvLayout::default().label_last().pixel_max(255.0);
/// assert_eq!((layout.label_last, layout.pixel_max), (true, 255.0));
/// # Ok::<(), teenygrad::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct CsvLayout {
    /// The label is the line's last field rather than its first.
    pub label_last: bool,
    /// The largest pixel value: fields in `[0, pixel_max]` are read as `value / pixel_max`.
    /// Finite and positive, or parsing is an [`Error::InvalidArgument`].
    pub pixel_max: f32,
}

impl CsvLayout {
    /// This module's own layout, which [`write_csv`] writes: the label, then pixels in `[0, 1]`.
    pub const TEENYGRAD: CsvLayout = CsvLayout {
        label_last: false,
        pixel_max: 1.0,
    };

    /// The layout of UCI's optical recognition of handwritten digits (`optdigits.tra`,
    /// `optdigits.tes`): 64 counts in `0..=16`, then the label, no header.
    pub const UCI_OPTDIGITS: CsvLayout = CsvLayout {
        label_last: true,
        pixel_max: 16.0,
    };

    /// The same layout with the label last.
    pub fn label_last(self) -> Self {
        CsvLayout {
            label_last: true,
            ..self
        }
    }

    /// The same layout with pixels in `[0, pixel_max]`.
    pub fn pixel_max(self, pixel_max: f32) -> Self {
        CsvLayout { pixel_max, ..self }
    }

    /// The 1-based column of the label, and of pixel `k`.
    fn columns(&self, k: usize) -> (usize, usize) {
        match self.label_last {
            false => (1, k + 2),
            true => (COLUMNS, k + 1),
        }
    }
}

impl Default for CsvLayout {
    /// [`CsvLayout::TEENYGRAD`].
    fn default() -> Self {
        CsvLayout::TEENYGRAD
    }
}

/// Reads a dataset from a CSV file: `label,p0,…,p63` per line, the label in `0..=9` and the pixels
/// in `[0, 1]`, with an optional header line. A bad file is rejected whole with `file:line`.
///
/// # Errors
///
/// [`Error::Io`] if the file cannot be read; [`Error::Data`] (located at `path:line`) if it is
/// not UTF-8, holds no data rows, or has a line with the wrong number of columns, a field that is
/// not a number, a label outside `0..=9` or a pixel outside `[0, 1]` (NaN and infinities
/// included), or a blank line before more data.
///
/// ```
/// use teenygrad::data::{read_csv, toy_digits_split, write_csv};
///
/// let path = std::env::temp_dir().join(format!("teenygrad-doc-read-{}.csv", std::process::id()));
/// let digits = toy_digits_split(1, 20, 0);
/// write_csv(&path, &digits.train)?;
/// assert_eq!(read_csv(&path)?, digits.train);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), teenygrad::Error>(())
/// ```
pub fn read_csv(path: impl AsRef<Path>) -> Result<Dataset> {
    read_csv_with(path, CsvLayout::TEENYGRAD)
}

/// Reads a dataset from a CSV file in another `layout` of 64 pixels and a label, as [`read_csv`]
/// reads its own: for example UCI's `optdigits.tra` with [`CsvLayout::UCI_OPTDIGITS`].
///
/// # Errors
///
/// As [`read_csv`], with the pixels' range `[0, layout.pixel_max]`; and
/// [`Error::InvalidArgument`] if `layout.pixel_max` is not finite and positive.
pub fn read_csv_with(path: impl AsRef<Path>, layout: CsvLayout) -> Result<Dataset> {
    let path = path.as_ref();
    check_layout(layout, "read_csv_with")?;
    let bytes = std::fs::read(path).map_err(|e| Error::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    parse_bytes(&bytes, &path.display().to_string(), layout)
}

fn check_layout(layout: CsvLayout, op: &'static str) -> Result<()> {
    let max = layout.pixel_max;
    if max.is_finite() && max > 0.0 {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        op,
        message: format!("pixel_max must be finite and positive, got {max}"),
    })
}

/// Parses a dataset from raw bytes, checking first that they are UTF-8.
///
/// `source_name` names the input in error locations (`source_name:line`).
///
/// # Errors
///
/// As [`parse_csv`], plus an [`Error::Data`] naming the line of the first byte that is not UTF-8.
///
/// ```
/// use teenygrad::data::parse_csv_bytes;
///
/// let err = parse_csv_bytes(b"\xff,0", "bad.csv").unwrap_err();
/// assert!(err.to_string().starts_with("bad.csv:1: "));
/// ```
pub fn parse_csv_bytes(bytes: &[u8], source_name: &str) -> Result<Dataset> {
    parse_bytes(bytes, source_name, CsvLayout::TEENYGRAD)
}

fn parse_bytes(bytes: &[u8], source_name: &str, layout: CsvLayout) -> Result<Dataset> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_text(text, source_name, layout),
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            let line = 1 + good.iter().filter(|&&b| b == b'\n').count();
            Err(Error::Data {
                location: format!("{source_name}:{line}"),
                message: format!(
                    "the file is not valid UTF-8 (bad byte at offset {})",
                    e.valid_up_to()
                ),
            })
        }
    }
}

/// Parses a dataset from CSV text in [`read_csv`]'s layout; `source_name` names the input in
/// error locations (`source_name:line`).
///
/// # Errors
///
/// An [`Error::Data`] located at `source_name:line` if the text holds no data rows, or has a line
/// with the wrong number of columns, a field that is not a number, a label outside `0..=9`, a pixel
/// outside `[0, 1]` (NaN and infinities included), or a blank line before more data.
///
/// ```
/// use teenygrad::data::parse_csv;
///
/// let row = format!("7{}\n", ",0.5".repeat(64));
/// let data = parse_csv(&format!("label,pixels...\n{row}{row}\n"), "two.csv")?;
/// assert_eq!(data.labels, vec![7, 7]);
/// assert_eq!(data.images[1][63], 0.5);
///
/// let err = parse_csv("3,0.5,0.5\n", "short.csv").unwrap_err();
/// assert_eq!(err.to_string(), "short.csv:1: expected 65 columns (a label and 64 pixels), got 3");
/// # Ok::<(), teenygrad::Error>(())
/// ```
pub fn parse_csv(text: &str, source_name: &str) -> Result<Dataset> {
    parse_text(text, source_name, CsvLayout::TEENYGRAD)
}

/// Parses a dataset from CSV text in another `layout` (see [`CsvLayout`]), as [`parse_csv`]
/// parses its own.
///
/// # Errors
///
/// As [`parse_csv`], with the pixels' range `[0, layout.pixel_max]`; and
/// [`Error::InvalidArgument`] if `layout.pixel_max` is not finite and positive.
pub fn parse_csv_with(text: &str, source_name: &str, layout: CsvLayout) -> Result<Dataset> {
    check_layout(layout, "parse_csv_with")?;
    parse_text(text, source_name, layout)
}

fn parse_text(text: &str, source_name: &str, layout: CsvLayout) -> Result<Dataset> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let error = |line: usize, message: String| Error::Data {
        location: format!("{source_name}:{line}"),
        message,
    };

    let mut data = Dataset::default();
    let mut blank_since: Option<usize> = None;
    let (mut last_line, mut header) = (0, None);
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        last_line = line_no;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.trim().is_empty() {
            blank_since.get_or_insert(line_no);
            continue;
        }
        if let Some(blank) = blank_since {
            let place = match data.is_empty() && header.is_none() {
                true => "before the data",
                false => "in the middle of the data",
            };
            return Err(error(
                blank,
                format!("blank line {place} (only trailing blank lines are allowed)"),
            ));
        }
        if line_no == 1 && line.split(',').all(|field| field.trim().parse::<f64>().is_err()) {
            header = Some(line);
            continue;
        }
        let (label, image) = parse_row(line, layout).map_err(|mut message| {
            if line_no == 1 {
                message += &numbered_header_hint(line);
            }
            error(line_no, message)
        })?;
        data.labels.push(label);
        data.images.push(image);
    }
    if data.is_empty() {
        let message = if last_line == 0 {
            "the file is empty: no data rows".to_string()
        } else {
            let hint = header.map_or(String::new(), separator_hint);
            format!("no data rows (only a header or blank lines){hint}")
        };
        return Err(error(last_line.max(1), message));
    }
    Ok(data)
}

/// For a line without a comma that has another common separator: a note saying so. Spaces count
/// only between fields (numpy's `savetxt` separates by one space by default).
fn separator_hint(line: &str) -> String {
    let other = [';', '\t', '|'].into_iter().find(|&c| line.contains(c));
    let other = other.or_else(|| line.trim().contains(' ').then_some(' '));
    match other {
        Some(c) if !line.contains(',') => {
            format!("; fields are separated by commas, and this line has {c:?} instead")
        }
        _ => String::new(),
    }
}

/// For a first line whose fields count up from 0 or 1, as the header of column numbers some
/// tools write (pandas without column names): a note that it was read as data.
fn numbered_header_hint(line: &str) -> String {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    let counts_from = |first: usize| (first..).zip(&fields).all(|(i, f)| f.parse() == Ok(i));
    // A header has a name per column; a shorter counting line is data gone wrong some other way.
    if fields.len() >= COLUMNS && (counts_from(0) || counts_from(1)) {
        "; this line looks like a header of column numbers, which is read as data: a header is \
         skipped only when none of its fields is a number"
            .to_string()
    } else {
        String::new()
    }
}

fn parse_row(line: &str, layout: CsvLayout) -> std::result::Result<(u8, [f32; FEATURES]), String> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if fields.len() != COLUMNS {
        let order = match layout.label_last {
            false => format!("a label and {FEATURES} pixels"),
            true => format!("{FEATURES} pixels and a label"),
        };
        let index_hint = match (fields.len() == COLUMNS + 1, fields[fields.len() - 1].is_empty()) {
            (true, true) => "; one too many: the line ends with a comma",
            (true, false) if fields[0].parse::<usize>().is_ok() => {
                "; one too many: is the first an index column (pandas' `to_csv` writes one unless \
                 `index=False`)?"
            }
            _ => "",
        };
        // `str::lines` ends lines at LF (CRLF included): a file whose lines end in CR alone is
        // one long line.
        let cr_hint = match line.contains('\r') {
            true => {
                "; the line holds carriage returns: are its lines ended by CR alone? Only LF or \
                     CRLF ends a line"
            }
            false => "",
        };
        return Err(format!(
            "expected {COLUMNS} columns ({order}), got {}{}{index_hint}{cr_hint}",
            fields.len(),
            separator_hint(line)
        ));
    }
    let (label_column, _) = layout.columns(0);
    let label_field = fields[label_column - 1];
    let label = match label_field.parse::<f64>() {
        Err(_) => {
            return Err(format!(
                "column {label_column} (label): {:?} is not a number",
                shorten(label_field)
            ));
        }
        Ok(v) if v.fract() == 0.0 && (0.0..CLASSES as f64).contains(&v) => v as u8,
        Ok(_) => {
            return Err(format!(
                "column {label_column} (label): {:?} is not a class label in 0..={}",
                shorten(label_field),
                CLASSES - 1
            ));
        }
    };
    let max = layout.pixel_max;
    let mut image = [0.0f32; FEATURES];
    for (k, pixel) in image.iter_mut().enumerate() {
        let (_, column) = layout.columns(k);
        let field = fields[column - 1];
        let value: f32 = field.parse().map_err(|_| {
            format!(
                "column {column} (pixel {k}): {:?} is not a number",
                shorten(field)
            )
        })?;
        if !(0.0..=max).contains(&value) {
            let hint = match max == 1.0 && value > 1.0 && value.fract() == 0.0 {
                true => {
                    "; pixels of another range are read with a `CsvLayout` whose `pixel_max` is \
                     their largest value (UCI's optdigits: `CsvLayout::UCI_OPTDIGITS`)"
                }
                false => "",
            };
            return Err(format!(
                "column {column} (pixel {k}): {:?} is outside [0, {max}]{hint}",
                shorten(field)
            ));
        }
        // Within [0, max], so the quotient is within [0, 1]; exact for max = 1.
        *pixel = value / max;
    }
    Ok((label, image))
}

/// A field cut to a readable length for an error message.
fn shorten(field: &str) -> String {
    const MAX: usize = 40;
    match field.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}...", &field[..end]),
        None => field.to_string(),
    }
}

/// Writes a dataset as CSV with a header line (`label,p0,…,p63`), one sample a line.
///
/// Values are written in the shortest form that reads back to the same `f32`, so
/// [`read_csv`] returns an identical dataset.
///
/// # Errors
///
/// [`Error::Data`] (and nothing written) if the dataset could not be read back: it is empty, its
/// `images` and `labels` differ in length, a label is not below 10, or a pixel is outside
/// `[0, 1]`;
/// [`Error::Io`] if the file cannot be written; then a file that was there is left as it was: the
/// new one is written beside it, with its permissions, and renamed over it once whole; except where
/// that cannot be done (a read-only directory, another user's file in a sticky one such as `/tmp`,
/// a name too long to stage it under), and the file is written in place, as `std::fs::write` does.
///
/// ```
/// use teenygrad::data::{toy_digits_split, write_csv};
///
/// let path = std::env::temp_dir().join(format!("teenygrad-doc-write-{}.csv", std::process::id()));
/// write_csv(&path, &toy_digits_split(3, 10, 0).train)?;
/// let text = std::fs::read_to_string(&path).unwrap();
/// assert!(text.starts_with("label,p0,p1,"));
/// assert_eq!(text.lines().count(), 11);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), teenygrad::Error>(())
/// ```
pub fn write_csv(path: impl AsRef<Path>, data: &Dataset) -> Result<()> {
    let path = path.as_ref();
    let name = path.display().to_string();
    if data.labels.is_empty() && data.images.is_empty() {
        return Err(Error::Data {
            location: name,
            message: "cannot write an empty dataset: read_csv rejects a file with no data rows".to_string(),
        });
    }
    if data.images.len() != data.labels.len() {
        return Err(Error::Data {
            location: name,
            message: format!(
                "cannot write a dataset with {} images but {} labels",
                data.images.len(),
                data.labels.len()
            ),
        });
    }
    let mut out = String::with_capacity(32 + data.len() * FEATURES * 10);
    out.push_str("label");
    for k in 0..FEATURES {
        let _ = write!(out, ",p{k}");
    }
    out.push('\n');
    for (i, (image, &label)) in data.images.iter().zip(&data.labels).enumerate() {
        let invalid = |message: String| Error::Data {
            location: format!("{name}: sample {i}"),
            message,
        };
        if usize::from(label) >= CLASSES {
            return Err(invalid(format!(
                "cannot write label {label}: labels are 0..={}",
                CLASSES - 1
            )));
        }
        if let Some((k, v)) = image.iter().enumerate().find(|(_, v)| !(0.0..=1.0).contains(*v)) {
            return Err(invalid(format!(
                "cannot write pixel {k} = {v}: pixels are in [0, 1]"
            )));
        }
        let _ = write!(out, "{label}");
        for v in image {
            let _ = write!(out, ",{v}");
        }
        out.push('\n');
    }
    crate::file::write_replacing(path, out.as_bytes()).map_err(|e| Error::Io {
        path: name,
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, value: &str) -> String {
        format!("{label}{}", format!(",{value}").repeat(FEATURES))
    }

    #[test]
    fn header_only_when_no_field_is_a_number() {
        let text = format!("{}\n{}\n", row("1", "0"), row("2", "1"));
        assert_eq!(parse_csv(&text, "t").unwrap().labels, vec![1, 2]);
        let text = format!("label,x\n{}\n", row("1", "0"));
        assert_eq!(parse_csv(&text, "t").unwrap().labels, vec![1]);
        // A first row whose label alone is bad is a data row in error, not a header to skip.
        for label in ["?", "\"2\"", ""] {
            let text = format!("{}\n{}\n", row(label, "0"), row("2", "1"));
            let err = parse_csv(&text, "t").unwrap_err().to_string();
            assert!(err.starts_with("t:1: "), "{label}: {err}");
        }
    }

    /// A header of column numbers is data, in error: the message says it looks like a header.
    #[test]
    fn a_numbered_header_is_named() {
        let hint = "this line looks like a header of column numbers";
        for first in [0, 1] {
            let header: Vec<String> = (first..first + COLUMNS).map(|i| i.to_string()).collect();
            let text = format!("{}\n{}\n", header.join(","), row("2", "0.5"));
            let err = parse_csv(&text, "t").unwrap_err().to_string();
            assert!(err.starts_with("t:1: column ") && err.contains(hint), "{err}");
        }
        // Counting but short (not a header's width), not counting, or not on the first line: no
        // hint.
        let err = parse_csv("1,2,3\n", "t").unwrap_err().to_string();
        assert!(!err.contains(hint), "{err}");
        let err = parse_csv(&format!("{}\n", row("1", "7")), "t")
            .unwrap_err()
            .to_string();
        assert!(!err.contains(hint), "{err}");
        let numbers: Vec<String> = (0..COLUMNS).map(|i| i.to_string()).collect();
        let text = format!("{}\n{}\n", row("2", "0.5"), numbers.join(","));
        let err = parse_csv(&text, "t").unwrap_err().to_string();
        assert!(err.starts_with("t:2: ") && !err.contains(hint), "{err}");
    }

    /// A file with another separator is read as one field per line: the error says why.
    #[test]
    fn another_separator_is_named() {
        let semicolons = row("1", "0").replace(',', ";");
        let tabs = row("1", "0").replace(',', "\t");
        for (text, want) in [
            (
                format!("{semicolons}\n"),
                "t:1: no data rows (only a header or blank lines); fields are separated by commas, \
                 and this line has ';' instead",
            ),
            (
                format!("label\tp0\n{tabs}\n"),
                "t:2: expected 65 columns (a label and 64 pixels), got 1; fields are separated by \
                 commas, and this line has '\\t' instead",
            ),
            // numpy's `savetxt` default: the first line is read as a header, the second says why.
            (
                format!(
                    "{}\n{}\n",
                    row("1", "0").replace(',', " "),
                    row("2", "0").replace(',', " ")
                ),
                "t:2: expected 65 columns (a label and 64 pixels), got 1; fields are separated by \
                 commas, and this line has ' ' instead",
            ),
            // Commas present: no hint, whatever else the line holds.
            (
                "3,0.5;0.5\n".to_string(),
                "t:1: expected 65 columns (a label and 64 pixels), got 2",
            ),
        ] {
            assert_eq!(parse_csv(&text, "t").unwrap_err().to_string(), want);
        }
    }

    /// Lines ended by CR alone read as one line, whose count of columns is then named with why.
    #[test]
    fn lines_ended_by_cr_alone_are_named() {
        let text = format!("{}\r{}\r", row("1", "0"), row("2", "0"));
        assert_eq!(
            parse_csv(&text, "t").unwrap_err().to_string(),
            "t:1: expected 65 columns (a label and 64 pixels), got 129; the line holds carriage \
             returns: are its lines ended by CR alone? Only LF or CRLF ends a line"
        );
        // CRLF is read as LF.
        let text = format!("{}\r\n{}\r\n", row("1", "0"), row("2", "0"));
        assert_eq!(parse_csv(&text, "t").unwrap().labels, vec![1, 2]);
    }

    /// pandas' `to_csv` writes the row index first unless told not to: one column too many.
    #[test]
    fn an_index_column_is_named() {
        let text = format!(",label{}\n0,{}\n", ",p".repeat(FEATURES), row("3", "0"));
        let err = parse_csv(&text, "t").unwrap_err().to_string();
        assert!(err.starts_with("t:2: expected 65 columns (a label and 64 pixels), got 66; one too many: is the first an index column"), "{err}");
        let err = parse_csv(&format!("{},0,0\n", row("3", "0")), "t")
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("got 67"), "{err}");
        // A trailing comma is named as such; a first field that is no index gets no guess.
        let err = parse_csv(&format!("{},\n", row("3", "0")), "t")
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("got 66; one too many: the line ends with a comma"),
            "{err}"
        );
        let err = parse_csv(&format!("x,{}\n", row("3", "0")), "t")
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("got 66"), "{err}");
    }

    #[test]
    fn shorten_cuts_long_fields_on_char_boundaries() {
        assert_eq!(shorten("abc"), "abc");
        let long = "é".repeat(50);
        assert_eq!(shorten(&long), format!("{}...", "é".repeat(40)));
    }

    #[test]
    fn label_must_be_an_integer() {
        let err = parse_csv(&row("2.5", "0"), "t").unwrap_err();
        assert!(err.to_string().contains("\"2.5\" is not a class label"), "{err}");
        assert_eq!(parse_csv(&row("2.0", "0"), "t").unwrap().labels, vec![2]);
    }
}
