//! A BM25 index over tool documents (SPEC §7.2): name words (split on `_ . : -`), toolset,
//! description and top-level parameter names, lowercased and lightly stemmed.

use crate::registry::ToolEntry;
use std::collections::HashMap;
use std::sync::Arc;

const K1: f64 = 1.5;
const B: f64 = 0.75;

/// Splits text into lowercase, stemmed terms.
pub(crate) fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(|word| stem(&word.to_lowercase()))
        .collect()
}

/// A light English stemmer: plurals, `-ing`, `-ed`, and a final `e` (so "archive",
/// "archives", "archived" and "archiving" meet at "archiv").
pub(crate) fn stem(word: &str) -> String {
    let base = strip_endings(word);
    if base.len() > 3 && base.ends_with('e') {
        return base[..base.len() - 1].to_string();
    }
    base
}

fn strip_endings(word: &str) -> String {
    let n = word.chars().count();
    let strip = |suffix: &str, keep: usize| -> Option<String> {
        (word.ends_with(suffix) && n > keep).then(|| word[..word.len() - suffix.len()].to_string())
    };
    if let Some(base) = strip("ies", 4) {
        return base + "y";
    }
    if word.ends_with("sses") {
        return word[..word.len() - 2].to_string();
    }
    for ending in ["ches", "shes", "xes", "zes"] {
        if let Some(base) = strip(ending, 4) {
            return base + &ending[..ending.len() - 2];
        }
    }
    if word.ends_with('s') && !word.ends_with("ss") && !word.ends_with("us") && n > 3 {
        return word[..word.len() - 1].to_string();
    }
    if let Some(base) = strip("ing", 5) {
        return base;
    }
    if let Some(base) = strip("ed", 4) {
        return base;
    }
    word.to_string()
}

struct Document {
    tool: Arc<ToolEntry>,
    frequencies: HashMap<String, u32>,
    length: f64,
}

/// The index of one selection's searchable tools.
pub(crate) struct Index {
    documents: Vec<Document>,
    document_frequency: HashMap<String, u32>,
    average_length: f64,
}

fn document_terms(tool: &ToolEntry) -> Vec<String> {
    let mut all = terms(tool.name.as_str());
    all.extend(terms(tool.toolset.as_str()));
    let description = tool
        .schema
        .get("description")
        .and_then(|d| d.as_str())
        .unwrap_or(&tool.description);
    all.extend(terms(description));
    if let Some(properties) = tool
        .schema
        .get("parameters")
        .and_then(|p| p.get("properties"))
        .and_then(|p| p.as_object())
    {
        for name in properties.keys() {
            all.extend(terms(name));
        }
    }
    all
}

impl Index {
    /// Indexes `tools` (kept in the given order, which breaks ties).
    pub(crate) fn new(tools: &[Arc<ToolEntry>]) -> Self {
        let mut document_frequency: HashMap<String, u32> = HashMap::new();
        let documents: Vec<Document> = tools
            .iter()
            .map(|tool| {
                let words = document_terms(tool);
                let mut frequencies: HashMap<String, u32> = HashMap::new();
                for word in &words {
                    *frequencies.entry(word.clone()).or_default() += 1;
                }
                for word in frequencies.keys() {
                    *document_frequency.entry(word.clone()).or_default() += 1;
                }
                Document {
                    tool: tool.clone(),
                    frequencies,
                    length: words.len() as f64,
                }
            })
            .collect();
        let average_length = if documents.is_empty() {
            1.0
        } else {
            documents.iter().map(|d| d.length).sum::<f64>() / documents.len() as f64
        };
        Self {
            documents,
            document_frequency,
            average_length,
        }
    }

    /// Number of indexed tools.
    pub(crate) fn len(&self) -> usize {
        self.documents.len()
    }

    /// The best `limit` tools for `query`: an exact name match first, then tools containing
    /// the query's rarest known term, by BM25 score, ties by name.
    pub(crate) fn search(&self, query: &str, limit: usize) -> Vec<Arc<ToolEntry>> {
        let wanted = query.trim().to_lowercase();
        let exact = self
            .documents
            .iter()
            .find(|d| d.tool.name.as_str().to_lowercase() == wanted);
        let mut query_terms = terms(query);
        query_terms.dedup();
        let known: Vec<&String> = query_terms
            .iter()
            .filter(|t| self.document_frequency.contains_key(*t))
            .collect();
        let rarest = known
            .iter()
            .min_by_key(|t| {
                self.document_frequency
                    .get(**t)
                    .copied()
                    .unwrap_or(u32::MAX)
            })
            .copied();
        let total = self.documents.len() as f64;
        let mut scored: Vec<(f64, &Document)> = self
            .documents
            .iter()
            .filter(|d| rarest.is_some_and(|r| d.frequencies.contains_key(r)))
            .filter(|d| exact.is_none_or(|e| !std::ptr::eq(*d, e)))
            .map(|d| {
                let score: f64 = known
                    .iter()
                    .map(|term| {
                        let tf = d.frequencies.get(*term).copied().unwrap_or(0) as f64;
                        if tf == 0.0 {
                            return 0.0;
                        }
                        let df = self.document_frequency.get(*term).copied().unwrap_or(0) as f64;
                        let idf = (1.0 + (total - df + 0.5) / (df + 0.5)).ln();
                        let norm = 1.0 - B + B * d.length / self.average_length;
                        idf * tf * (K1 + 1.0) / (tf + K1 * norm)
                    })
                    .sum();
                (score, d)
            })
            .collect();
        scored.sort_by(|a, b| {
            b.0.partial_cmp(&a.0)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.1.tool.name.cmp(&b.1.tool.name))
        });
        exact
            .into_iter()
            .chain(scored.into_iter().map(|(_, d)| d))
            .take(limit)
            .map(|d| d.tool.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stemmer_folds_common_endings() {
        for (a, b) in [
            ("files", "file"),
            ("archive", "archived"),
            ("archiving", "archives"),
            ("queries", "query"),
            ("matches", "match"),
            ("updating", "updates"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} / {b}");
        }
        assert_eq!(stem("searching"), "search");
        assert_eq!(stem("boxes"), "box");
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("class"), "class");
        assert_eq!(
            terms("read_file.v2:Thing-s"),
            ["read", "fil", "v2", "thing", "s"]
        );
    }
}
