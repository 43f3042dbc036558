//! The BM25 ranking of tool search (SPEC §13.3, pi's `Bm25Ranker`) over an index built once
//! per tool set: every document's terms are counted and interned when the index is built,
//! and a query only visits the documents that hold one of its terms.

use std::collections::HashMap;

use super::document::SearchDocument;
use super::tokenize::Tokenizer;
use crate::js::js_trim;

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalization.
const B: f64 = 0.75;
/// A query term in the name counts this many times its IDF: more than any number of mentions
/// in the description (whose part is below `K1 + 1`).
const NAME_WEIGHT: f64 = 3.0;
/// A query term in the namespace counts this many times its IDF: every tool of the namespace
/// has it, so it helps find the namespace but not the tool in it.
const NAMESPACE_WEIGHT: f64 = 0.5;

/// A ranked tool: its name and its BM25 score.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    /// The tool's name.
    pub name: String,
    /// The BM25 score, name and namespace weights and the local-name bonus included.
    pub score: f64,
}

/// A term, interned.
type TermId = u32;
/// A document, by position.
type DocId = u32;

/// Documents indexed for tool search: build it when the tool set changes, search it per
/// query.
///
/// The ranking (k1 = 1.2, b = 0.75) of a query over N documents:
/// - each distinct query term t has `idf(t) = ln(1 + (N − f + 0.5) / (f + 0.5))`, f being the
///   number of documents with t in the name, the text or the namespace text;
/// - a document scores, per query term, `idf · (3·[t in name] + 0.5·[t in namespace] +
///   c·(k1 + 1) / (c + k1·(1 − b + b·len / avg)))` with c the term's count in the text, len
///   the text's word count and avg the mean of those; a document that scores 0 is left out;
/// - a document whose whole local name (after the last `__`) is in the query gets the sum of
///   the query terms' IDFs once more;
/// - the order: a query that is the name (or its part after a `__`) first, then more query
///   terms matched, then a higher score; ties keep document order.
///
/// ```
/// use pi_runtime::tool_search::{SearchDocument, ToolSearchIndex};
/// use serde_json::json;
///
/// let empty = json!({"type": "object", "properties": {}});
/// let index = ToolSearchIndex::new([
///     SearchDocument::new("release_notes", "Deploy notes: deploy, deploy again", &empty, None),
///     SearchDocument::new("ship_deploy", "Ship it", &empty, None),
///     SearchDocument::new("other", "Unrelated", &empty, None),
/// ]);
/// let names: Vec<_> = index.search("deploy", 8).into_iter().map(|m| m.name).collect();
/// assert_eq!(names, ["ship_deploy", "release_notes"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolSearchIndex {
    terms: HashMap<String, TermId>,
    /// Per term, the documents with it in the name, text or namespace text, ascending.
    postings: Vec<Vec<DocId>>,
    documents: Vec<IndexedDocument>,
    /// Per distinct namespace text, its terms (sorted, distinct).
    namespaces: Vec<Box<[TermId]>>,
    /// The documents' text lengths, added up.
    total_length: u64,
}

#[derive(Debug, Clone)]
struct IndexedDocument {
    name: String,
    /// The name as the exact-name test compares it.
    exact_name: String,
    /// Term counts of the text, sorted by term.
    counts: Box<[(TermId, u32)]>,
    /// The text's word count.
    length: u64,
    /// The name's terms, sorted, distinct.
    name_terms: Box<[TermId]>,
    /// The terms of the name's part after its last `__`, distinct.
    local_terms: Box<[TermId]>,
    /// Index into `namespaces`.
    namespace: usize,
}

impl IndexedDocument {
    fn count(&self, term: TermId) -> u32 {
        self.counts
            .binary_search_by_key(&term, |&(t, _)| t)
            .map_or(0, |i| self.counts[i].1)
    }
}

/// A document that scored, before sorting.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ranked {
    pub(crate) document: DocId,
    pub(crate) score: f64,
    covered: u32,
    exact: bool,
}

impl ToolSearchIndex {
    /// Index the documents, in this order (the order ties keep).
    pub fn new(documents: impl IntoIterator<Item = SearchDocument>) -> Self {
        let mut builder = Builder::default();
        for document in documents {
            builder.add(&document);
        }
        builder.index
    }

    /// How many documents the index holds.
    pub fn len(&self) -> usize {
        self.documents.len()
    }

    /// Whether the index holds no document.
    pub fn is_empty(&self) -> bool {
        self.documents.is_empty()
    }

    /// The name of the document at this position.
    pub fn name(&self, document: usize) -> Option<&str> {
        self.documents.get(document).map(|d| d.name.as_str())
    }

    /// The best `limit` matches of `query` over all documents, best first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Match> {
        self.rank(query, limit, &[])
            .into_iter()
            .map(|ranked| self.to_match(ranked))
            .collect()
    }

    pub(crate) fn to_match(&self, ranked: Ranked) -> Match {
        Match {
            name: self.documents[ranked.document as usize].name.clone(),
            score: ranked.score,
        }
    }

    /// Rank as if the documents in `excluded` (ascending positions) were not there: they
    /// count neither in the statistics nor as matches. Floating-point operations follow pi's
    /// order, so that ties stay ties.
    pub(crate) fn rank(&self, query: &str, limit: usize, excluded: &[DocId]) -> Vec<Ranked> {
        let mut query_terms: Vec<(Option<TermId>, String)> = Vec::new();
        Tokenizer::default().each_word(query, |word| {
            if !query_terms.iter().any(|(_, term)| term == word) {
                query_terms.push((self.terms.get(word).copied(), word.to_owned()));
            }
        });
        let count = self.documents.len() - excluded.len();
        if query_terms.is_empty() || count == 0 || limit == 0 {
            return Vec::new();
        }

        let excluded_length: u64 = excluded
            .iter()
            .map(|&d| self.documents[d as usize].length)
            .sum();
        let total_length = self.total_length - excluded_length;
        // pi: `sum / count || 1`.
        let average = if total_length == 0 {
            1.0
        } else {
            total_length as f64 / count as f64
        };
        let idf: Vec<f64> = query_terms
            .iter()
            .map(|&(term, _)| {
                let frequency = term.map_or(0, |term| self.frequency(term, excluded));
                (1.0 + ((count - frequency) as f64 + 0.5) / (frequency as f64 + 0.5)).ln()
            })
            .collect();
        let bonus = idf.iter().fold(0.0, |sum, idf| sum + idf);
        let exact_query = exact_name(query);

        let mut ranked = Vec::new();
        for document in self.candidates(&query_terms, excluded) {
            let d = &self.documents[document as usize];
            let norm = K1 * (1.0 - B + B * d.length as f64 / average);
            let namespace = &self.namespaces[d.namespace];
            let mut score = 0.0;
            let mut covered = 0;
            for (&(term, _), idf) in query_terms.iter().zip(&idf) {
                let (in_name, in_namespace, count) = match term {
                    Some(term) => (
                        d.name_terms.binary_search(&term).is_ok(),
                        namespace.binary_search(&term).is_ok(),
                        d.count(term),
                    ),
                    None => (false, false, 0),
                };
                let count = f64::from(count);
                let weight = (if in_name { NAME_WEIGHT } else { 0.0 })
                    + (if in_namespace { NAMESPACE_WEIGHT } else { 0.0 })
                    + count * (K1 + 1.0) / (count + norm);
                if weight > 0.0 {
                    covered += 1;
                }
                score += idf * weight;
            }
            if score == 0.0 {
                continue;
            }
            let whole_local_name = !d.local_terms.is_empty()
                && d.local_terms
                    .iter()
                    .all(|&local| query_terms.iter().any(|&(term, _)| term == Some(local)));
            if whole_local_name {
                score += bonus;
            }
            ranked.push(Ranked {
                document,
                score,
                covered,
                exact: is_exact_name(&exact_query, &d.exact_name),
            });
        }
        best(ranked, limit)
    }

    /// How many documents not excluded have the term in a field.
    fn frequency(&self, term: TermId, excluded: &[DocId]) -> usize {
        let holding = self.postings[term as usize].len();
        let excluded_holding = excluded
            .iter()
            .filter(|&&d| self.postings[term as usize].binary_search(&d).is_ok())
            .count();
        holding - excluded_holding
    }

    /// The documents (not excluded) holding a query term, ascending: the only ones that can
    /// score above 0.
    fn candidates(
        &self,
        query_terms: &[(Option<TermId>, String)],
        excluded: &[DocId],
    ) -> impl Iterator<Item = DocId> {
        let mut marked = vec![0u64; self.documents.len().div_ceil(64)];
        for &(term, _) in query_terms {
            for &d in term.map_or(&[][..], |t| &self.postings[t as usize]) {
                marked[d as usize / 64] |= 1 << (d % 64);
            }
        }
        for &d in excluded {
            marked[d as usize / 64] &= !(1 << (d % 64));
        }
        marked.into_iter().enumerate().flat_map(|(word, mut bits)| {
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let bit = bits.trailing_zeros();
                    bits &= bits - 1;
                    word as DocId * 64 + bit
                })
            })
        })
    }
}

/// The `limit` best in pi's order: exact name first, then more terms covered, then the higher
/// score; ties in document order (pi's sort is stable).
fn best(mut ranked: Vec<Ranked>, limit: usize) -> Vec<Ranked> {
    let order = |a: &Ranked, b: &Ranked| {
        b.exact
            .cmp(&a.exact)
            .then(b.covered.cmp(&a.covered))
            .then(b.score.total_cmp(&a.score))
            .then(a.document.cmp(&b.document))
    };
    if ranked.len() > limit {
        ranked.select_nth_unstable_by(limit, order);
        ranked.truncate(limit);
    }
    ranked.sort_unstable_by(order);
    ranked
}

/// Lower case, every UTF-16 unit outside `[a-z0-9_$]` as `_`, so `dev-radius` names
/// `dev_radius` (pi's `normalizeName`, whose pattern reads UTF-16 units).
fn exact_name(name: &str) -> String {
    js_trim(name)
        .to_lowercase()
        .chars()
        .flat_map(|c| {
            let keep = c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$';
            let units = if keep { 1 } else { c.len_utf16() };
            std::iter::repeat_n(if keep { c } else { '_' }, units)
        })
        .collect()
}

/// Whether the query is the whole name, or its part after a `__`.
fn is_exact_name(query: &str, name: &str) -> bool {
    name == query
        || name
            .strip_suffix(query)
            .is_some_and(|head| head.ends_with("__"))
}

/// Builds an index, one document at a time.
#[derive(Default)]
struct Builder {
    index: ToolSearchIndex,
    tokenizer: Tokenizer,
    /// Namespace texts already indexed.
    namespace_ids: HashMap<String, usize>,
    /// Scratch: one field's terms.
    terms: Vec<TermId>,
}

impl Builder {
    fn add(&mut self, document: &SearchDocument) {
        let id = self.index.documents.len() as DocId;

        self.field_terms(document.text());
        let length = self.terms.len() as u64;
        self.terms.sort_unstable();
        let mut counts: Vec<(TermId, u32)> = Vec::new();
        for &term in &self.terms {
            match counts.last_mut() {
                Some((last, count)) if *last == term => *count += 1,
                _ => counts.push((term, 1)),
            }
        }

        let name_terms = self.distinct_terms(document.name());
        let local_name = document.name().split("__").last().unwrap_or("");
        let local_terms = self.distinct_terms(local_name);
        let namespace = self.namespace(document.namespace_text());

        // Postings: ascending by construction, since documents come in order.
        let namespace_terms = &self.index.namespaces[namespace];
        let mut fields: Vec<TermId> = counts
            .iter()
            .map(|&(term, _)| term)
            .chain(name_terms.iter().copied())
            .chain(namespace_terms.iter().copied())
            .collect();
        fields.sort_unstable();
        fields.dedup();
        for term in fields {
            self.index.postings[term as usize].push(id);
        }

        self.index.total_length += length;
        self.index.documents.push(IndexedDocument {
            name: document.name().to_owned(),
            exact_name: exact_name(document.name()),
            counts: counts.into(),
            length,
            name_terms,
            local_terms,
            namespace,
        });
    }

    /// The terms of `text` into `self.terms`, in order.
    fn field_terms(&mut self, text: &str) {
        self.terms.clear();
        let Builder {
            index,
            tokenizer,
            terms,
            ..
        } = self;
        tokenizer.each_word(text, |word| terms.push(index.intern(word)));
    }

    fn distinct_terms(&mut self, text: &str) -> Box<[TermId]> {
        self.field_terms(text);
        let mut terms = self.terms.clone();
        terms.sort_unstable();
        terms.dedup();
        terms.into()
    }

    fn namespace(&mut self, text: &str) -> usize {
        if let Some(&namespace) = self.namespace_ids.get(text) {
            return namespace;
        }
        let terms = self.distinct_terms(text);
        let namespace = self.index.namespaces.len();
        self.index.namespaces.push(terms);
        self.namespace_ids.insert(text.to_owned(), namespace);
        namespace
    }
}

impl ToolSearchIndex {
    fn intern(&mut self, term: &str) -> TermId {
        if let Some(&id) = self.terms.get(term) {
            return id;
        }
        let id = self.postings.len() as TermId;
        self.terms.insert(term.to_owned(), id);
        self.postings.push(Vec::new());
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn document(name: &str, description: &str) -> SearchDocument {
        SearchDocument::new(name, description, &json!({}), None)
    }

    fn scores(index: &ToolSearchIndex, query: &str, limit: usize) -> Vec<(String, f64)> {
        index
            .search(query, limit)
            .into_iter()
            .map(|m| (m.name, (m.score * 1e6).round() / 1e6))
            .collect()
    }

    #[test]
    fn name_beats_mentions() {
        let index = ToolSearchIndex::new([
            document(
                "release_notes",
                "Deploy notes: deploy, deploy again, deploy everywhere (deploy deploy)",
            ),
            document("ship_deploy", "Ship it"),
            document("other", "Unrelated"),
        ]);
        assert_eq!(
            scores(&index, "deploy", 8),
            [
                ("ship_deploy".into(), 1.410011),
                ("release_notes".into(), 0.729108)
            ]
        );
    }

    #[test]
    fn stemming_edges() {
        let index = ToolSearchIndex::new([
            document("a", "class box"),
            document("b", "bu glas dish"),
            document("c", "bus glass"),
            document("d", "boxe dishe"),
        ]);
        assert_eq!(
            scores(&index, "classes boxes bus glass dishes", 8),
            [
                ("a".into(), 2.52261),
                ("c".into(), 2.52261),
                ("b".into(), 1.059496)
            ]
        );
    }

    #[test]
    fn the_local_name_bonus_and_stop_words() {
        let index = ToolSearchIndex::new([
            document("x_report", "Make a report"),
            document("a_report", "Make a report"),
        ]);
        assert_eq!(
            scores(&index, "report", 8),
            [("a_report".into(), 0.911608), ("x_report".into(), 0.729286)]
        );
    }

    #[test]
    fn exact_names() {
        assert_eq!(exact_name("  App__Thread-Read "), "app__thread_read");
        assert_eq!(exact_name("a😀"), "a__");
        assert!(is_exact_name("thread_read", "mcp__app__thread_read"));
        assert!(is_exact_name(
            "mcp__app__thread_read",
            "mcp__app__thread_read"
        ));
        assert!(!is_exact_name("read", "mcp__app__thread_read"));
    }

    #[test]
    fn limits_and_empty_queries() {
        let index = ToolSearchIndex::new((0..12).map(|i| document(&format!("t{i}"), "tool")));
        let names: Vec<String> = index
            .search("tools", 8)
            .into_iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(names, ["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"]);
        assert!(index.search("tool", 0).is_empty());
        assert!(index.search("the of", 8).is_empty());
        assert!(ToolSearchIndex::default().search("tool", 8).is_empty());
    }

    #[test]
    fn excluded_documents_leave_the_statistics() {
        let all = ToolSearchIndex::new([
            document("one", "alpha beta"),
            document("two", "alpha"),
            document("three", "gamma gamma gamma"),
        ]);
        let without_one = ToolSearchIndex::new([
            document("two", "alpha"),
            document("three", "gamma gamma gamma"),
        ]);
        let excluded: Vec<(String, f64)> = all
            .rank("alpha gamma", 8, &[0])
            .into_iter()
            .map(|r| {
                let m = all.to_match(r);
                (m.name, m.score)
            })
            .collect();
        let rebuilt: Vec<(String, f64)> = without_one
            .search("alpha gamma", 8)
            .into_iter()
            .map(|m| (m.name, m.score))
            .collect();
        assert_eq!(excluded, rebuilt);
    }
}
