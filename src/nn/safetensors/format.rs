//! The safetensors file layout: an 8-byte little-endian header length, a JSON header naming each
//! tensor's dtype, dims and byte range, then the data. Reading checks everything the format
//! promises (the ranges tile the data exactly, each range fits its dims) before any value is used.

use std::collections::{BTreeMap, HashMap};

use super::json::{self, Json};

/// The format caps the header at 100 MB, so a length beyond it is corrupt, not a huge model.
const MAX_HEADER: u64 = 100_000_000;

/// One tensor of a checked file.
pub(super) struct Entry<'a> {
    pub(super) dtype: String,
    pub(super) dims: Vec<usize>,
    pub(super) data: &'a [u8],
}

/// A checked file: its tensors by name and its `__metadata__` strings.
pub(super) struct File<'a> {
    pub(super) tensors: HashMap<String, Entry<'a>>,
    pub(super) metadata: BTreeMap<String, String>,
}

/// The tensors and metadata of a checked file, or a message saying why `bytes` are not one.
pub(super) fn read(bytes: &[u8]) -> Result<File<'_>, String> {
    let invalid = |why: String| format!("not a valid safetensors file: {why}");
    let Some((len, rest)) = bytes.split_first_chunk::<8>() else {
        return Err(invalid(format!(
            "{} bytes is shorter than the 8-byte header length",
            bytes.len()
        )));
    };
    let n = u64::from_le_bytes(*len);
    if n > MAX_HEADER {
        return Err(invalid(format!(
            "a header of {n} bytes exceeds the format's limit of {MAX_HEADER}"
        )));
    }
    let Some((header, data)) = usize::try_from(n).ok().and_then(|n| rest.split_at_checked(n)) else {
        return Err(invalid(format!(
            "a header of {n} bytes runs past the end of the file ({} bytes)",
            bytes.len()
        )));
    };
    let header = std::str::from_utf8(header).map_err(|e| invalid(format!("the header is not UTF-8: {e}")))?;
    if !header.starts_with('{') {
        return Err(invalid("the header does not start with `{`".into()));
    }
    let header = json::parse(header).map_err(invalid)?;
    if let Json::Object(members) = &header
        && members.iter().filter(|(key, _)| key == "__metadata__").count() > 1
    {
        return Err(invalid("`__metadata__` appears more than once".into()));
    }
    let members = header
        .into_members()
        .ok_or_else(|| invalid("the header is not a JSON object".into()))?;

    let mut ranges = Vec::with_capacity(members.len());
    let mut metadata = BTreeMap::new();
    for (name, value) in members {
        if name == "__metadata__" {
            metadata = read_metadata(value).map_err(invalid)?;
            continue;
        }
        let info = TensorInfo::parse(value).map_err(|why| invalid(format!("tensor {name}: {why}")))?;
        let (begin, end) = info.offsets;
        if begin.max(end) > data.len() as u64 {
            return Err(invalid(format!(
                "tensor {name}: its data_offsets [{begin}, {end}] run past the end of the file ({} data bytes)",
                data.len()
            )));
        }
        ranges.push((name, info));
    }
    // The ranges, in order, must tile the data exactly: no gap, no overlap, nothing left over.
    ranges.sort_by_key(|(_, info)| info.offsets);
    let mut cursor = 0u64;
    let mut entries = HashMap::with_capacity(ranges.len());
    for (name, info) in ranges {
        let (begin, end) = info.offsets;
        let size = info
            .byte_size()
            .map_err(|why| invalid(format!("tensor {name}: {why}")))?;
        if begin != cursor || end < begin || end - begin != size {
            return Err(invalid(format!(
                "tensor {name}: data_offsets [{begin}, {end}] should be [{cursor}, {}] for {size} bytes of {} {:?}",
                cursor.saturating_add(size),
                info.dtype,
                info.dims
            )));
        }
        cursor = end;
        // Every offset is at most `data.len()`, checked above, so these are in range.
        let data = &data[begin as usize..end as usize];
        entries.insert(
            name.into_owned(),
            Entry {
                dtype: info.dtype,
                dims: info.dims,
                data,
            },
        );
    }
    if cursor != data.len() as u64 {
        return Err(invalid(format!(
            "the tensors cover {cursor} of the {} data bytes",
            data.len()
        )));
    }
    Ok(File {
        tensors: entries,
        metadata,
    })
}

/// A file holding `tensors` (name, dims, values) as `F32`, laid out in name order, with
/// `metadata` (none if empty).
pub(super) fn write(tensors: &[(String, Vec<usize>, Vec<f32>)], metadata: &[(String, String)]) -> Vec<u8> {
    let mut order: Vec<_> = tensors.iter().collect();
    order.sort_by(|a, b| a.0.cmp(&b.0));
    let mut fields = Vec::with_capacity(order.len() + 1);
    if !metadata.is_empty() {
        let pairs: Vec<String> = (metadata.iter())
            .map(|(key, value)| format!("{}:{}", json::quote(key), json::quote(value)))
            .collect();
        fields.push(format!(r#""__metadata__":{{{}}}"#, pairs.join(",")));
    }
    let mut offset = 0;
    for (name, dims, values) in &order {
        let end = offset + 4 * values.len();
        let dims: Vec<String> = dims.iter().map(usize::to_string).collect();
        fields.push(format!(
            r#"{}:{{"dtype":"F32","shape":[{}],"data_offsets":[{offset},{end}]}}"#,
            json::quote(name),
            dims.join(",")
        ));
        offset = end;
    }
    let mut header = format!("{{{}}}", fields.join(","));
    // Pad with spaces so the data starts 8-byte aligned, as the reference writers do.
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut bytes = Vec::with_capacity(8 + header.len() + offset);
    bytes.extend((header.len() as u64).to_le_bytes());
    bytes.extend(header.as_bytes());
    for (_, _, values) in order {
        bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    }
    bytes
}

struct TensorInfo {
    dtype: String,
    dims: Vec<usize>,
    offsets: (u64, u64),
}

impl TensorInfo {
    fn parse(value: Json) -> Result<Self, String> {
        if let Some(key) = value.repeated_key() {
            return Err(format!("`{key}` appears more than once"));
        }
        let mut fields = value.into_members().ok_or("its entry is not a JSON object")?;
        let mut take = |key: &str| fields.remove(key).ok_or(format!("`{key}` is missing"));
        let Json::String(dtype) = take("dtype")? else {
            return Err("`dtype` is not a string".into());
        };
        let malformed = |key: &str| format!("`{key}` is not a list of non-negative integers that fit");
        let dims = match take("shape")? {
            Json::Array(items) => items
                .iter()
                .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
                .collect::<Option<Vec<usize>>>(),
            _ => None,
        }
        .ok_or_else(|| malformed("shape"))?;
        let offsets = match take("data_offsets")? {
            Json::Array(items) => match items.as_slice() {
                [begin, end] => begin.as_u64().zip(end.as_u64()),
                _ => None,
            },
            _ => None,
        }
        .ok_or_else(|| "`data_offsets` is not two non-negative integers".to_string())?;
        Ok(TensorInfo {
            dtype: dtype.into_owned(),
            dims,
            offsets,
        })
    }

    /// The bytes the dims take in this dtype.
    fn byte_size(&self) -> Result<u64, String> {
        let bits = dtype_bits(&self.dtype).ok_or_else(|| format!("unknown dtype `{}`", self.dtype))?;
        let overflow = || format!("dims {:?} overflow", self.dims);
        // A shape's own rule: the dims other than 0 multiply within `usize`, in any order.
        let numel = crate::shape::runtime::checked_numel(&self.dims).map_err(|_| overflow())? as u64;
        let total_bits = numel.checked_mul(bits).ok_or_else(overflow)?;
        if total_bits % 8 != 0 {
            return Err(format!(
                "{numel} values of {} do not fill whole bytes",
                self.dtype
            ));
        }
        Ok(total_bits / 8)
    }
}

/// Bits per value of each dtype the format defines.
fn dtype_bits(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "F4" => 4,
        "F6_E2M3" | "F6_E3M2" => 6,
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" | "F8_E8M0" => 8,
        "I16" | "U16" | "F16" | "BF16" => 16,
        "I32" | "U32" | "F32" => 32,
        "I64" | "U64" | "F64" | "C64" => 64,
        _ => return None,
    })
}

/// `__metadata__`, if present, maps strings to strings, or is `null`.
fn read_metadata(value: Json) -> Result<BTreeMap<String, String>, String> {
    let not_strings = || "`__metadata__` is not an object of strings (or null)".to_string();
    if let Some(key) = value.repeated_key() {
        return Err(format!("`__metadata__` has `{key}` more than once"));
    }
    match value {
        Json::Object(members) => (members.into_iter())
            .map(|(key, value)| match value {
                Json::String(value) => Ok((key.into_owned(), value.into_owned())),
                _ => Err(not_strings()),
            })
            .collect(),
        // The reference implementation reads its metadata as an optional map.
        Json::Null => Ok(BTreeMap::new()),
        _ => Err(not_strings()),
    }
}
