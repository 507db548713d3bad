//! A BM25 index over tool documents (docs/tool-search.md). Terms are lowercased words — names split
//! on `_ . : -` and camelCase — without stop words, reduced by the Snowball English stemmer.
//! A tool's name counts three times, its toolset, description, parameter names and
//! parameter descriptions once. Query terms are widened with a small table of tool
//! vocabulary synonyms (time/date/clock, find/search/grep, run/execute/shell, …).

use crate::registry::ToolEntry;
use rust_stemmers::{Algorithm, Stemmer};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

const K1: f64 = 1.5;
const B: f64 = 0.75;
/// How many times a name term counts.
const NAME_WEIGHT: u32 = 3;
/// Results scoring below this share of the best result are dropped.
const RELEVANCE_FLOOR: f64 = 0.35;
/// A synonym counts this much of the word the query used.
const SYNONYM_WEIGHT: f64 = 0.6;

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// Words that carry no meaning for finding a tool.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "of", "in", "on", "to", "for", "from", "with", "and", "or", "is", "are",
    "be", "it", "its", "this", "that", "my", "me", "i", "we", "you", "your", "some", "any", "what",
    "how", "do", "does", "can", "please", "into", "at", "by", "as", "all", "one",
];

/// Groups of words a query may use for the same thing (tool vocabulary).
const SYNONYMS: &[&[&str]] = &[
    &[
        "time",
        "date",
        "clock",
        "now",
        "datetime",
        "today",
        "timestamp",
        "day",
        "weekday",
    ],
    &["find", "search", "grep", "look", "locate", "lookup"],
    &[
        "run", "execute", "exec", "shell", "command", "launch", "program",
    ],
    &["edit", "modify", "patch", "change", "replace", "fix"],
    &[
        "calculate",
        "compute",
        "calc",
        "arithmetic",
        "math",
        "multiply",
        "add",
        "sum",
        "divide",
        "subtract",
        "expression",
        "evaluate",
    ],
    &["read", "open", "show", "view", "cat", "content", "display"],
    &["write", "save", "create", "put"],
    &["list", "directory", "folder", "dir", "ls", "entries"],
    &["sleep", "wait", "pause", "delay"],
    &["json", "query", "extract", "field", "path"],
    &["remember", "memory", "recall", "forget", "fact"],
    &["task", "todo", "plan", "checklist"],
    &["echo", "repeat", "back", "return"],
    &["file", "document", "text"],
];

/// Splits text into lowercase, stemmed terms (stop words dropped).
pub(crate) fn terms(text: &str) -> Vec<String> {
    words(text)
        .filter(|word| !STOP_WORDS.contains(&word.as_str()))
        .map(|word| stem(&word))
        .collect()
}

/// Lowercase words: split on anything not alphanumeric and at camelCase boundaries.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|part| !part.is_empty())
        .flat_map(|part| {
            let mut out = Vec::new();
            let mut current = String::new();
            let mut previous_lower = false;
            for c in part.chars() {
                if c.is_uppercase() && previous_lower && !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                previous_lower = c.is_lowercase() || c.is_ascii_digit();
                current.extend(c.to_lowercase());
            }
            if !current.is_empty() {
                out.push(current);
            }
            out
        })
}

/// The Snowball English stem of a lowercase word.
pub(crate) fn stem(word: &str) -> String {
    STEMMER.stem(word).into_owned()
}

/// Stemmed synonym groups, and each stem's groups.
static SYNONYM_INDEX: LazyLock<HashMap<String, Vec<String>>> = LazyLock::new(|| {
    let mut index: HashMap<String, Vec<String>> = HashMap::new();
    for group in SYNONYMS {
        let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
        for s in &stems {
            let entry = index.entry(s.clone()).or_default();
            for other in &stems {
                if other != s && !entry.contains(other) {
                    entry.push(other.clone());
                }
            }
        }
    }
    index
});

/// The query's terms with their weights: its own words 1.0, their synonyms less.
fn query_terms(query: &str) -> Vec<(String, f64)> {
    let own = terms(query);
    let mut weighted: Vec<(String, f64)> = Vec::new();
    for term in &own {
        if !weighted.iter().any(|(t, _)| t == term) {
            weighted.push((term.clone(), 1.0));
        }
    }
    for term in &own {
        for synonym in SYNONYM_INDEX.get(term).into_iter().flatten() {
            if !weighted.iter().any(|(t, _)| t == synonym) {
                weighted.push((synonym.clone(), SYNONYM_WEIGHT));
            }
        }
    }
    weighted
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
    let mut all = Vec::new();
    for term in terms(tool.name.as_str()) {
        for _ in 0..NAME_WEIGHT {
            all.push(term.clone());
        }
    }
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
        for (name, property) in properties {
            all.extend(terms(name));
            if let Some(text) = property.get("description").and_then(|d| d.as_str()) {
                all.extend(terms(text));
            }
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

    /// The best `limit` tools for `query`: an exact name match first, then by BM25 score
    /// over the query's terms and their synonyms, ties by name.
    pub(crate) fn search(&self, query: &str, limit: usize) -> Vec<Arc<ToolEntry>> {
        let wanted = query.trim().to_lowercase();
        let exact = self
            .documents
            .iter()
            .find(|d| d.tool.name.as_str().to_lowercase() == wanted);
        let weighted: Vec<(String, f64)> = query_terms(query)
            .into_iter()
            .filter(|(t, _)| self.document_frequency.contains_key(t))
            .collect();
        let total = self.documents.len() as f64;
        let idf = |term: &str| {
            let df = self.document_frequency.get(term).copied().unwrap_or(0) as f64;
            (1.0 + (total - df + 0.5) / (df + 0.5)).ln()
        };
        let mut scored: Vec<(f64, &Document)> = self
            .documents
            .iter()
            .filter(|d| exact.is_none_or(|e| !std::ptr::eq(*d, e)))
            .map(|d| {
                let score: f64 = weighted
                    .iter()
                    .map(|(term, weight)| {
                        let tf = d.frequencies.get(term).copied().unwrap_or(0) as f64;
                        if tf == 0.0 {
                            return 0.0;
                        }
                        let norm = 1.0 - B + B * d.length / self.average_length;
                        weight * idf(term) * tf * (K1 + 1.0) / (tf + K1 * norm)
                    })
                    .sum();
                (score, d)
            })
            .filter(|(score, _)| *score > 0.0)
            .collect();
        scored.sort_by(|a, b| {
            b.0.partial_cmp(&a.0)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.1.tool.name.cmp(&b.1.tool.name))
        });
        // The relevance floor: a tool scoring a small share of the best match found it
        // through an incidental word (a "failed" in a long issue-tracker question finding
        // a CI re-run tool); it is dropped rather than offered.
        if let Some(&(best, _)) = scored.first() {
            let floor = best * RELEVANCE_FLOOR;
            scored.retain(|(score, _)| *score >= floor);
        }
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
        assert_eq!(
            terms("read_file.v2:ThingTwo"),
            ["read", "file", "v2", "thing", "two"]
        );
        assert_eq!(terms("the time of day"), ["time", "day"]);
    }

    #[test]
    fn synonyms_widen_a_query() {
        let widened: Vec<String> = query_terms("current time")
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        assert!(widened.contains(&stem("date")), "{widened:?}");
    }

    /// A slice of a GitHub server's tools, as an MCP client would register them.
    fn github_tools() -> Vec<Arc<ToolEntry>> {
        let tools: &[(&str, &str, &[&str])] = &[
            (
                "github_list_issues",
                "List issues in a GitHub repository, filtered by state, labels and assignee, sorted by created or updated time",
                &["owner", "repo", "state", "labels", "assignee", "sort"],
            ),
            (
                "github_get_issue",
                "Get the details of one issue in a GitHub repository",
                &["owner", "repo", "issue_number"],
            ),
            (
                "github_search_issues",
                "Search issues and pull requests across GitHub repositories",
                &["query", "sort", "order"],
            ),
            (
                "github_create_issue",
                "Create a new issue in a GitHub repository",
                &["owner", "repo", "title", "body", "assignees", "labels"],
            ),
            (
                "github_update_issue",
                "Update an existing issue: title, body, state, labels, assignees",
                &["owner", "repo", "issue_number", "state"],
            ),
            (
                "github_add_issue_comment",
                "Add a comment to an issue",
                &["owner", "repo", "issue_number", "body"],
            ),
            (
                "github_list_pull_requests",
                "List pull requests in a repository",
                &["owner", "repo", "state"],
            ),
            (
                "github_merge_pull_request",
                "Merge a pull request",
                &["owner", "repo", "pull_number"],
            ),
            (
                "github_list_workflow_runs",
                "List the runs of a GitHub Actions workflow",
                &["owner", "repo", "workflow_id"],
            ),
            (
                "github_rerun_failed_workflow_run_jobs",
                "Re-run only the failed jobs of a GitHub Actions workflow run",
                &["owner", "repo", "run_id"],
            ),
            (
                "github_get_job_logs",
                "Download the logs of a workflow job, or of every failed job of a run",
                &["owner", "repo", "job_id", "run_id", "failed_only"],
            ),
            (
                "github_create_branch",
                "Create a new branch in a repository",
                &["owner", "repo", "branch", "from_branch"],
            ),
            (
                "github_get_file_contents",
                "Get the contents of a file or directory from a repository",
                &["owner", "repo", "path"],
            ),
            (
                "github_list_commits",
                "List the commits of a branch",
                &["owner", "repo", "sha"],
            ),
        ];
        tools
            .iter()
            .map(|(name, description, params)| {
                let properties: serde_json::Map<String, serde_json::Value> = params
                    .iter()
                    .map(|p| (p.to_string(), serde_json::json!({ "type": "string" })))
                    .collect();
                let schema = serde_json::json!({
                    "description": description,
                    "parameters": { "type": "object", "properties": properties },
                });
                let mut entry = crate::registry::test_entry(name, "github");
                entry.schema = schema.as_object().cloned().unwrap_or_default().into();
                Arc::new(entry)
            })
            .collect()
    }

    #[test]
    fn a_long_query_drops_a_tool_that_matched_one_incidental_word() {
        let index = Index::new(&github_tools());
        let found: Vec<String> = index
            .search(
                "list the open issues in our tracker, sorted by when they were last updated, \
                 with their labels and assignee, and say which ones failed triage",
                10,
            )
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        assert!(
            found.first().is_some_and(|n| n.contains("issue")),
            "{found:?}"
        );
        assert!(
            !found
                .iter()
                .any(|n| n == "github_rerun_failed_workflow_run_jobs"),
            "{found:?}"
        );
    }

    #[test]
    fn a_short_query_keeps_its_one_word_match() {
        let index = Index::new(&github_tools());
        let found: Vec<String> = index
            .search("rerun failed jobs", 3)
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        assert_eq!(
            found.first().map(String::as_str),
            Some("github_rerun_failed_workflow_run_jobs")
        );
    }
}
