//! The BM25 ranking of tool search (pi's `Bm25Ranker`) over an index built once
//! per tool set: every document's terms are counted and interned when the index is built,
//! and a query only visits the postings of its own terms.

use std::ops::Range;

use super::document::{SearchDocument, ToolNamespace};
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
pub(crate) type DocId = u32;

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
    /// The terms, by the hash of their text.
    terms: hashbrown::HashTable<TermId>,
    /// The terms' texts, by term.
    term_texts: Strings,
    /// Per term, the documents with it in the name, text or namespace text, ascending: the
    /// postings of term t are `postings[posting_starts[t]..posting_starts[t + 1]]`.
    postings: Vec<Posting>,
    posting_starts: Vec<u32>,
    documents: Vec<IndexedDocument>,
    /// The local-name terms of all documents (`IndexedDocument::local_terms` are ranges).
    local_terms: Vec<TermId>,
    /// The documents' names.
    names: Strings,
    /// The names as the exact-name test compares them.
    exact_names: Strings,
    /// The documents by the hash of their name, sorted.
    by_name: Vec<(u64, DocId)>,
    /// The documents by the hash of each query that names them exactly (the exact name, each
    /// part of it after a `__`), sorted.
    by_exact_query: Vec<(u64, DocId)>,
    /// The documents' text lengths, added up.
    total_length: u64,
}

/// A document holding a term.
#[derive(Debug, Clone, Copy, Default)]
struct Posting {
    document: DocId,
    /// How often the term is in the document's text.
    count: u32,
    in_name: bool,
    in_namespace: bool,
}

#[derive(Debug, Clone)]
struct IndexedDocument {
    /// The text's word count.
    length: u32,
    /// The distinct terms of the name's part after its last `__`, in `local_terms`.
    local_terms: Range<u32>,
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
        let documents = documents.into_iter();
        let mut builder = Builder::with_capacity(documents.size_hint().0);
        for document in documents {
            let namespace = builder.namespace_of_text(document.namespace_text());
            builder.add(document.name(), |piece| piece(document.text()), namespace);
        }
        builder.finish()
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
        (document < self.documents.len()).then(|| self.names.get(document as DocId))
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
            name: self.names.get(ranked.document).to_owned(),
            score: ranked.score,
        }
    }

    /// The documents named `name`, ascending.
    pub(crate) fn documents_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = DocId> + 'a {
        hashed(&self.by_name, name).filter(move |&d| self.names.get(d) == name)
    }

    /// Rank as if the documents in `excluded` (ascending, distinct) were not there: they
    /// count neither in the statistics nor as matches.
    ///
    /// Scores add up term by term over the postings, in query order: a document lacking a
    /// term would add `idf · 0`, and `x + 0.0 == x`, so every score is the sum pi computes
    /// document by document, to the last bit, and ties stay ties.
    pub(crate) fn rank(&self, query: &str, limit: usize, excluded: &[DocId]) -> Vec<Ranked> {
        // The distinct words, in query order; a table of those seen keeps this linear in the
        // query's length (a scan of the words so far made it quadratic).
        let mut query_terms: Vec<(Option<TermId>, String)> = Vec::new();
        let mut seen: hashbrown::HashTable<usize> = hashbrown::HashTable::new();
        Tokenizer::default().each_word(query, |word| {
            let word_hash = hash(word);
            if seen
                .find(word_hash, |&i| query_terms[i].1 == word)
                .is_none()
            {
                seen.insert_unique(word_hash, query_terms.len(), |&i| hash(&query_terms[i].1));
                query_terms.push((self.term(word), word.to_owned()));
            }
        });
        let count = self.documents.len() - excluded.len();
        if query_terms.is_empty() || count == 0 || limit == 0 {
            return Vec::new();
        }

        let excluded_length: u64 = excluded
            .iter()
            .map(|&d| u64::from(self.documents[d as usize].length))
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

        let mut skip = DocSet::new(self.documents.len());
        for &d in excluded {
            skip.insert(d);
        }
        let mut scores = vec![0.0f64; self.documents.len()];
        let mut covered = vec![0u32; self.documents.len()];
        let mut touched: Vec<DocId> = Vec::new();
        for (&(term, _), &idf) in query_terms.iter().zip(&idf) {
            let Some(term) = term else { continue };
            for posting in self.postings_of(term) {
                let d = posting.document as usize;
                if skip.contains(posting.document) {
                    continue;
                }
                let norm = K1 * (1.0 - B + B * f64::from(self.documents[d].length) / average);
                let count = f64::from(posting.count);
                let weight = (if posting.in_name { NAME_WEIGHT } else { 0.0 })
                    + (if posting.in_namespace {
                        NAMESPACE_WEIGHT
                    } else {
                        0.0
                    })
                    + count * (K1 + 1.0) / (count + norm);
                // A posting has the term in some field, so its weight is above 0.
                if covered[d] == 0 {
                    touched.push(posting.document);
                }
                covered[d] += 1;
                scores[d] += idf * weight;
            }
        }

        // The query's terms that documents have, sorted: the local-name test looks each of a
        // document's terms up in it.
        let mut known: Vec<TermId> = query_terms.iter().filter_map(|&(term, _)| term).collect();
        known.sort_unstable();
        let exact = self.exact_documents(query);
        let ranked = touched
            .into_iter()
            .map(|document| {
                let d = document as usize;
                let mut score = scores[d];
                let local = &self.documents[d].local_terms;
                let local = &self.local_terms[local.start as usize..local.end as usize];
                let whole_local_name = !local.is_empty()
                    && local.iter().all(|local| known.binary_search(local).is_ok());
                if whole_local_name {
                    score += bonus;
                }
                Ranked {
                    document,
                    score,
                    covered: covered[d],
                    exact: exact.contains(&document),
                }
            })
            .collect();
        best(ranked, limit)
    }

    /// How many documents not excluded have the term in a field.
    fn frequency(&self, term: TermId, excluded: &[DocId]) -> usize {
        let postings = self.postings_of(term);
        let excluded_holding = excluded
            .iter()
            .filter(|&&d| postings.binary_search_by_key(&d, |p| p.document).is_ok())
            .count();
        postings.len() - excluded_holding
    }

    /// The documents whose name the query is (an *exact* match): the normalized query is
    /// the normalized name, or the name ends with `__` and the query.
    fn exact_documents(&self, query: &str) -> Vec<DocId> {
        let mut query_name = String::new();
        push_exact_name(&mut query_name, query);
        hashed(&self.by_exact_query, &query_name)
            .filter(|&d| {
                let name = self.exact_names.get(d);
                name == query_name
                    || name
                        .strip_suffix(query_name.as_str())
                        .is_some_and(|head| head.ends_with("__"))
            })
            .collect()
    }

    /// The term with this text, if a document has it.
    fn term(&self, text: &str) -> Option<TermId> {
        self.terms
            .find(hash(text), |&t| self.term_texts.get(t) == text)
            .copied()
    }

    fn intern(&mut self, text: &str) -> TermId {
        let hash = hash(text);
        let ToolSearchIndex {
            terms, term_texts, ..
        } = self;
        if let Some(&t) = terms.find(hash, |&t| term_texts.get(t) == text) {
            return t;
        }
        let t = term_texts.len() as TermId;
        term_texts.push_with(|out| out.push_str(text));
        terms.insert_unique(hash, t, |&t| self::hash(term_texts.get(t)));
        t
    }

    fn postings_of(&self, term: TermId) -> &[Posting] {
        let t = term as usize;
        match (self.posting_starts.get(t), self.posting_starts.get(t + 1)) {
            (Some(&start), Some(&end)) => &self.postings[start as usize..end as usize],
            _ => &[],
        }
    }
}

/// A set of documents, as bits.
struct DocSet(Vec<u64>);

impl DocSet {
    fn new(documents: usize) -> Self {
        DocSet(vec![0; documents.div_ceil(64)])
    }

    fn insert(&mut self, d: DocId) {
        self.0[d as usize / 64] |= 1 << (d % 64);
    }

    fn contains(&self, d: DocId) -> bool {
        self.0[d as usize / 64] & (1 << (d % 64)) != 0
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

/// Append the name lower-cased, every UTF-16 unit outside `[a-z0-9_$]` as `_`, so
/// `dev-radius` names `dev_radius` (pi's `normalizeName`, whose pattern reads UTF-16 units).
fn push_exact_name(out: &mut String, name: &str) {
    let name = js_trim(name);
    let keep = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$';
    if name.is_ascii() {
        out.extend(name.bytes().map(|b| {
            let c = char::from(b.to_ascii_lowercase());
            if keep(c) { c } else { '_' }
        }));
    } else {
        for c in name.to_lowercase().chars() {
            let units = if keep(c) { 1 } else { c.len_utf16() };
            out.extend(std::iter::repeat_n(if keep(c) { c } else { '_' }, units));
        }
    }
}

/// The queries that name a tool exactly: its normalized name, and each part of it after a
/// `__` (`thread_read` and `app__thread_read` name `mcp__app__thread_read`; `a___b` gives
/// both `_b` and `b`, as pi's `endsWith` sees them).
fn exact_queries(name: &str) -> impl Iterator<Item = &str> {
    let after_separators = (0..name.len())
        .filter(|&i| name.as_bytes()[i..].starts_with(b"__"))
        .map(|i| &name[i + 2..]);
    std::iter::once(name).chain(after_separators)
}

/// Strings one after the other in one buffer: one allocation for all the documents' names
/// (or terms, or summaries), not one each.
#[derive(Debug, Clone, Default)]
pub(crate) struct Strings {
    text: String,
    /// Where each string ends.
    ends: Vec<u32>,
}

impl Strings {
    /// Add a string, written by `write` at the end of the buffer.
    pub(crate) fn push_with(&mut self, write: impl FnOnce(&mut String)) -> &str {
        let start = self.text.len();
        write(&mut self.text);
        self.ends.push(self.text.len() as u32);
        &self.text[start..]
    }

    pub(crate) fn get(&self, i: u32) -> &str {
        let i = i as usize;
        let start = i.checked_sub(1).map_or(0, |j| self.ends[j] as usize);
        &self.text[start..self.ends[i] as usize]
    }

    fn len(&self) -> usize {
        self.ends.len()
    }
}

/// One hash for the lookup tables; fixed, so an index is the same in every process.
fn hash(key: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x7069_2d73_6561_7263).hash_one(key)
}

/// The documents under `key`'s hash in a sorted table (the caller checks the key itself).
fn hashed<'a>(table: &'a [(u64, DocId)], key: &str) -> impl Iterator<Item = DocId> + 'a {
    let hash = hash(key);
    let start = table.partition_point(|&(h, _)| h < hash);
    table[start..]
        .iter()
        .take_while(move |&&(h, _)| h == hash)
        .map(|&(_, d)| d)
}

/// Builds an index, one document at a time.
#[derive(Default)]
pub(crate) struct Builder<'a> {
    index: ToolSearchIndex,
    tokenizer: Tokenizer,
    /// Every posting with its term, in document order (sorted by term at the end).
    postings: Vec<(TermId, Posting)>,
    /// Namespaces already indexed, by text.
    namespace_texts: foldhash::HashMap<String, usize>,
    /// Namespaces already indexed, by value (the tools of a server share one).
    namespace_values: foldhash::HashMap<&'a ToolNamespace, usize>,
    /// Per namespace, its distinct terms, sorted.
    namespaces: Vec<Vec<TermId>>,
    /// Scratch: the terms of one field.
    terms: Vec<TermId>,
    /// Scratch: where one document holds each term, as `term << 2 | field`.
    fields: Vec<u64>,
}

/// The fields of a document, in `Builder::fields`.
const TEXT: u64 = 0;
const NAME: u64 = 1;
const NAMESPACE: u64 = 2;

impl<'a> Builder<'a> {
    /// A builder for about this many documents: the term table starts large enough for a few
    /// distinct words each, so building does not keep growing it.
    pub(crate) fn with_capacity(documents: usize) -> Self {
        let mut builder = Builder::default();
        let terms = 64 + 8 * documents.min(1 << 16);
        builder.index.terms.reserve(terms, |_| 0);
        builder.postings.reserve(terms);
        builder.index.documents.reserve(documents);
        builder
    }

    /// Index a document: its name, the pieces of its text (as the text they make joined with
    /// spaces: a space always separates words, so the words are the same), its namespace
    /// (from [`Builder::namespace_of_text`] or [`Builder::namespace_of`]).
    pub(crate) fn add(
        &mut self,
        name: &str,
        pieces: impl FnOnce(&mut dyn FnMut(&str)),
        namespace: usize,
    ) {
        let id = self.index.documents.len() as DocId;

        // Every place the document holds a term, sorted once: a run of one term is its
        // posting.
        self.collect_terms(pieces);
        let length = self.terms.len() as u32;
        self.fields.clear();
        self.fields
            .extend(self.terms.iter().map(|&t| u64::from(t) << 2 | TEXT));
        self.collect_terms(|piece| piece(name));
        self.fields
            .extend(self.terms.iter().map(|&t| u64::from(t) << 2 | NAME));
        self.fields.extend(
            self.namespaces[namespace]
                .iter()
                .map(|&t| u64::from(t) << 2 | NAMESPACE),
        );
        self.fields.sort_unstable();
        for run in self.fields.chunk_by(|a, b| a >> 2 == b >> 2) {
            let posting = Posting {
                document: id,
                count: run.iter().filter(|&&f| f & 3 == TEXT).count() as u32,
                in_name: run.iter().any(|&f| f & 3 == NAME),
                in_namespace: run.iter().any(|&f| f & 3 == NAMESPACE),
            };
            self.postings.push(((run[0] >> 2) as TermId, posting));
        }

        let local_name = name.split("__").last().unwrap_or("");
        self.collect_terms(|piece| piece(local_name));
        self.terms.sort_unstable();
        self.terms.dedup();
        let start = self.index.local_terms.len() as u32;
        self.index.local_terms.extend_from_slice(&self.terms);
        let local_terms = start..self.index.local_terms.len() as u32;

        self.index.names.push_with(|out| out.push_str(name));
        self.index.by_name.push((hash(name), id));
        let exact = self
            .index
            .exact_names
            .push_with(|out| push_exact_name(out, name));
        for query in exact_queries(exact) {
            self.index.by_exact_query.push((hash(query), id));
        }

        self.index.total_length += u64::from(length);
        self.index.documents.push(IndexedDocument {
            length,
            local_terms,
        });
    }

    /// The namespace whose text is `text`.
    pub(crate) fn namespace_of_text(&mut self, text: &str) -> usize {
        if let Some(&namespace) = self.namespace_texts.get(text) {
            return namespace;
        }
        let namespace = self.new_namespace(|piece| piece(text));
        self.namespace_texts.insert(text.to_owned(), namespace);
        namespace
    }

    /// The namespace of a tool (`None`: no namespace, an empty text).
    pub(crate) fn namespace_of(&mut self, namespace: Option<&'a ToolNamespace>) -> usize {
        let Some(namespace) = namespace else {
            return self.namespace_of_text("");
        };
        if let Some(&id) = self.namespace_values.get(namespace) {
            return id;
        }
        // The text is the three joined with spaces, so its words are theirs.
        let id = self.new_namespace(|piece| {
            piece(&namespace.name);
            piece(namespace.description.as_deref().unwrap_or(""));
            piece(namespace.instructions.as_deref().unwrap_or(""));
        });
        self.namespace_values.insert(namespace, id);
        id
    }

    pub(crate) fn finish(mut self) -> ToolSearchIndex {
        self.index.by_name.sort_unstable();
        self.index.by_exact_query.sort_unstable();
        // A counting sort by term, stable: each term's postings stay in document order.
        let terms = self.index.term_texts.len();
        let mut starts = vec![0u32; terms + 1];
        for &(term, _) in &self.postings {
            starts[term as usize + 1] += 1;
        }
        for t in 0..terms {
            starts[t + 1] += starts[t];
        }
        let mut next = starts.clone();
        let mut postings = vec![Posting::default(); self.postings.len()];
        for &(term, posting) in &self.postings {
            let slot = &mut next[term as usize];
            postings[*slot as usize] = posting;
            *slot += 1;
        }
        self.index.postings = postings;
        self.index.posting_starts = starts;
        self.index
    }

    fn new_namespace(&mut self, pieces: impl FnOnce(&mut dyn FnMut(&str))) -> usize {
        self.collect_terms(pieces);
        let mut terms = self.terms.clone();
        terms.sort_unstable();
        terms.dedup();
        self.namespaces.push(terms);
        self.namespaces.len() - 1
    }

    /// The terms of the pieces of a text into `self.terms`, in order (interned).
    fn collect_terms(&mut self, pieces: impl FnOnce(&mut dyn FnMut(&str))) {
        self.terms.clear();
        let Builder {
            index,
            tokenizer,
            terms,
            ..
        } = self;
        pieces(&mut |piece| tokenizer.each_word(piece, |word| terms.push(index.intern(word))));
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

    fn exact_name(name: &str) -> String {
        let mut out = String::new();
        push_exact_name(&mut out, name);
        out
    }

    #[test]
    fn exact_names() {
        assert_eq!(exact_name("  App__Thread-Read "), "app__thread_read");
        assert_eq!(exact_name("a😀"), "a__");
        assert_eq!(
            exact_queries("mcp__app__thread_read").collect::<Vec<_>>(),
            ["mcp__app__thread_read", "app__thread_read", "thread_read"]
        );
        assert_eq!(
            exact_queries("a___b").collect::<Vec<_>>(),
            ["a___b", "_b", "b"]
        );
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
