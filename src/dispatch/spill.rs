//! Stage 9: the size limit. A text result longer than the tool's `max_result_size_chars`
//! (else the configured default) is written whole to `<cache_dir>/spill/<id>.txt` and
//! replaced by a `<persisted-output>` block: its size, the spill file's absolute path on a
//! line of its own, and a preview of the first 1,500 characters. Objects (errors,
//! multimodal envelopes) are never spilled. If the file cannot be written the full result
//! is returned unchanged: nothing is lost.

use super::result::{ToolResult, json_text, json_text_len};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Characters of preview in the block.
pub(crate) const PREVIEW_CHARS: usize = 1500;

static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Applies the limit of `limit` characters (`None`: unlimited).
pub(super) fn limit_size(
    result: ToolResult,
    limit: Option<u64>,
    spill_dir: &Path,
    tool: &str,
) -> ToolResult {
    let Some(limit) = limit else {
        return result;
    };
    // A string of n bytes has at most n characters: the common case costs nothing (a
    // structured result's text is measured, not built).
    let bytes = match &result {
        ToolResult::Text(text) => text.len(),
        ToolResult::Json(value) => json_text_len(value),
        _ => return result,
    };
    if bytes as u64 <= limit {
        return result;
    }
    let text = match &result {
        ToolResult::Text(text) => std::borrow::Cow::Borrowed(text.as_str()),
        ToolResult::Json(value) => std::borrow::Cow::Owned(json_text(value)),
        _ => return result,
    };
    let chars = text.chars().count() as u64;
    if chars <= limit {
        return result;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let id = format!(
        "{tool}-{nanos}-{}-{}",
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    );
    let path = spill_dir.join(format!("{id}.txt"));
    let written =
        std::fs::create_dir_all(spill_dir).and_then(|_| std::fs::write(&path, text.as_bytes()));
    if let Err(error) = written {
        tracing::warn!(
            "cannot spill the {chars}-character result of {tool} to {}: {error}; returning it whole",
            path.display()
        );
        return result;
    }
    let absolute = path.canonicalize().unwrap_or(path);
    let preview: String = text.chars().take(PREVIEW_CHARS).collect();
    ToolResult::Text(format!(
        "<persisted-output>\nThis result has {chars} characters, more than the {limit} allowed \
         for {tool}. The full text was saved to:\n{}\nPreview (first {PREVIEW_CHARS} \
         characters):\n{preview}\n</persisted-output>",
        absolute.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_spilled_whole_and_short_text_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let short = ToolResult::Text("é".repeat(10));
        assert_eq!(limit_size(short.clone(), Some(10), dir.path(), "t"), short);
        let long = "é".repeat(2000) + "END";
        let out = limit_size(ToolResult::Text(long.clone()), Some(100), dir.path(), "t");
        let ToolResult::Text(text) = out else {
            panic!("spilled result is text: {out:?}")
        };
        assert!(
            text.starts_with("<persisted-output>\n") && text.ends_with("\n</persisted-output>")
        );
        assert!(text.contains("2003 characters"));
        let path = text
            .split_whitespace()
            .find(|w| w.ends_with(".txt"))
            .unwrap();
        assert!(Path::new(path).is_absolute());
        assert_eq!(std::fs::read_to_string(path).unwrap(), long);
        assert!(text.contains(&"é".repeat(PREVIEW_CHARS)));
        assert!(!text.contains(&"é".repeat(PREVIEW_CHARS + 1)));
        let error = ToolResult::Error(crate::dispatch::ToolError::new(
            crate::dispatch::ErrorType::HandlerError,
            "x".repeat(500),
        ));
        assert_eq!(limit_size(error.clone(), Some(10), dir.path(), "t"), error);
        let whole = ToolResult::Text(long);
        assert_eq!(limit_size(whole.clone(), None, dir.path(), "t"), whole);
    }

    #[test]
    fn long_structured_results_are_spilled_as_their_json_text() {
        let dir = tempfile::tempdir().unwrap();
        let value = serde_json::json!({"items": vec!["x"; 100]});
        let out = limit_size(ToolResult::Json(value.clone()), Some(50), dir.path(), "t");
        let ToolResult::Text(text) = out else {
            panic!("spilled result is text: {out:?}")
        };
        let path = text
            .split_whitespace()
            .find(|w| w.ends_with(".txt"))
            .unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), value.to_string());
    }

    #[test]
    fn a_structured_result_exactly_at_the_limit_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let value = serde_json::json!({"text": "é\"\n", "n": [1.5, -2, null]});
        let length = value.to_string().chars().count() as u64;
        let kept = ToolResult::Json(value.clone());
        assert_eq!(
            limit_size(kept.clone(), Some(length), dir.path(), "t"),
            kept
        );
        let out = limit_size(kept, Some(length - 1), dir.path(), "t");
        assert!(matches!(out, ToolResult::Text(text) if text.starts_with("<persisted-output>")));
    }
}
