// The sandbox's string searches against a reference, on texts and needles large enough that
// the sandbox searches in windows (its worst case is over 2 ** 22 comparisons). The reference
// is plain: it calls the same built-ins on slices small enough that they run as one native
// call, so it answers what QuickJS's own search does. Returns `{ checks, failures }`.

// A seeded generator: the same texts on every run.
let seed = 20260;
const random = () => {
	seed = (seed * 1103515245 + 12345) % 2147483648;
	return seed / 2147483648;
};
// Random digits in base `alphabet.length`, as many at a time as 30 bits hold, each then
// spelled as its symbol.
const randomText = (length, alphabet) => {
	const base = alphabet.length;
	const digits = Math.floor(30 / Math.log2(base));
	const blocks = [];
	for (let total = 0; total < length; total += digits) {
		blocks.push(Math.floor(random() * base ** digits).toString(base).padStart(digits, "0"));
	}
	let text = blocks.join("").slice(0, length);
	for (let digit = 0; digit < base; digit++) text = text.replaceAll(digit.toString(base), alphabet[digit]);
	return text;
};

// The reference searches: slices small enough to be searched in one native call (at most
// 2 ** 21 comparisons), widened while nothing is found so that a near match is cheap and a
// far one takes few calls.
const widest = (needle) => Math.max(1, Math.floor(2 ** 21 / Math.max(needle.length, 1)));
const refIndexOf = (text, needle, from) => {
	if (needle.length === 0) return from;
	for (let first = from, width = Math.min(64, widest(needle)); first + needle.length <= text.length; first += width, width = Math.min(width * 2, widest(needle))) {
		const at = text.slice(first, first + width + needle.length - 1).indexOf(needle);
		if (at !== -1) return first + at;
	}
	return -1;
};
const refLastIndexOf = (text, needle, from) => {
	if (needle.length === 0) return from;
	for (let last = Math.min(from, text.length - needle.length), width = Math.min(64, widest(needle)); last >= 0; last -= width, width = Math.min(width * 2, widest(needle))) {
		const first = Math.max(last - width + 1, 0);
		const at = text.slice(first, last + needle.length).lastIndexOf(needle);
		if (at !== -1) return first + at;
	}
	return -1;
};
// The matches a split or a replaceAll finds: each the first after the one before.
const refMatches = (text, needle) => {
	const found = [];
	for (let at = refIndexOf(text, needle, 0); at !== -1; at = refIndexOf(text, needle, at + needle.length)) found.push(at);
	return found;
};
const refSplit = (text, needle, found, limit) => {
	const max = limit === undefined ? 4294967295 : limit >>> 0;
	if (max === 0) return [];
	const parts = [];
	let start = 0;
	for (const at of found) {
		parts.push(text.slice(start, at));
		if (parts.length === max) return parts;
		start = at + needle.length;
	}
	parts.push(text.slice(start));
	return parts;
};
// GetSubstitution without captures, character by character.
const refSubstitute = (template, text, at, length) => {
	let out = "";
	for (let i = 0; i < template.length; i++) {
		const next = template[i + 1];
		if (template[i] === "$" && next !== undefined && "$&`'".includes(next)) {
			out += next === "$" ? "$" : next === "&" ? text.slice(at, at + length) : next === "`" ? text.slice(0, at) : text.slice(at + length);
			i++;
		} else {
			out += template[i];
		}
	}
	return out;
};
const refReplace = (text, needle, found, replacement) => {
	const out = [];
	let end = 0;
	for (const at of found) {
		const value =
			typeof replacement === "function" ? String(replacement(needle, at, text)) : refSubstitute(replacement, text, at, needle.length);
		out.push(text.slice(end, at), value);
		end = at + needle.length;
	}
	out.push(text.slice(end));
	return out.join("");
};

let checks = 0;
const failures = [];
const describe = (value) => (typeof value === "string" ? `string of ${value.length}` : Array.isArray(value) ? `array of ${value.length}` : String(value));
const same = (actual, expected) => {
	if (Array.isArray(expected)) {
		return Array.isArray(actual) && actual.length === expected.length && expected.every((part, i) => part === actual[i]);
	}
	return actual === expected;
};
const check = (label, actual, expected) => {
	checks++;
	if (!same(actual, expected)) failures.push(`${label}: ${describe(actual)}, expected ${describe(expected)}`);
};
const clampIndex = (index, length) => Math.min(Math.max(index, 0), length);

// Every search of `needle` in `text`, against the reference. `few` when the needle occurs a
// few times only, where the replacements that copy the text around each match stay small.
const searches = (name, text, needle, few) => {
	const label = `${name} (${text.length}, ${needle.length})`;
	const middle = Math.floor(text.length / 2);
	const ends = [text.length - needle.length, text.length - needle.length + 1];
	for (const from of [undefined, -5, 1, middle, ...ends, text.length + 10, NaN, Infinity, "7", { valueOf: () => 3 }]) {
		const expected = refIndexOf(text, needle, from === undefined ? 0 : clampIndex(Math.trunc(+from) || 0, text.length));
		check(`${label} indexOf from ${String(from)}`, text.indexOf(needle, from), expected);
		check(`${label} includes from ${String(from)}`, text.includes(needle, from), expected !== -1);
	}
	for (const from of [undefined, -1, 0, middle, ...ends, text.length, Infinity, NaN, "9"]) {
		const position = +from;
		const index = position !== position ? text.length : clampIndex(Math.trunc(position), text.length);
		check(`${label} lastIndexOf from ${String(from)}`, text.lastIndexOf(needle, from), refLastIndexOf(text, needle, index));
	}
	const found = refMatches(text, needle);
	for (const limit of [undefined, 0, 1, 2, 3, -1, 2 ** 32 + 2, "2"]) {
		const expected = refSplit(text, needle, found, limit === undefined ? undefined : +limit);
		check(`${label} split limit ${String(limit)}`, text.split(needle, limit), expected);
	}
	const where = (match, at, whole) => `<${at}:${match.length}:${whole.length}>`;
	const templates = few ? ["X", "[$&|$$|$0|$<n>|$]", "$`", "$'", where] : ["X", "[$&|$$|$1]", where];
	for (const template of templates) {
		const shown = typeof template === "function" ? "a function" : JSON.stringify(template);
		check(`${label} replace ${shown}`, text.replace(needle, template), refReplace(text, needle, found.slice(0, 1), template));
		check(`${label} replaceAll ${shown}`, text.replaceAll(needle, template), refReplace(text, needle, found, template));
	}
	return found.length;
};

// Which of the paths a window takes each case reaches; the sizes are just past the point
// where the sandbox searches in windows ((text length - needle length + 1) × (needle length
// - 1) comparisons over 2 ** 22).
const matches = {};
// Needles of at most 256 characters, which windows look for whole: random text with copies
// planted at either end, text whose matches overlap, and one letter.
const random1 = randomText(280000, "ab");
const needle17 = random1.slice(150000, 150017);
const text17 = needle17 + random1 + needle17;
matches.random17 = searches("random", text17, needle17, true);
const random2 = randomText(35000, "ab");
const needle129 = random2.slice(17000, 17129);
matches.random129 = searches("random", needle129 + random2 + needle129, needle129, true);
matches.absent129 = searches("random, absent", random2, needle129.slice(0, 128) + "c", true);
matches.periodic = searches("periodic", "ab".repeat(17500) + "a", "ab".repeat(64) + "a", false);
matches.letter = searches("one letter", "a".repeat(35000), "a".repeat(129), false);

// Copies at either side of where a window ends: the sandbox's windows of a 129-character
// needle hold 2 ** 20 / 129 = 8128 start positions, counted from the search's start, from
// just after a match, or back from the end.
const SPAN = 8128;
const plant = (base, needle, positions) => {
	let text = base;
	for (const at of positions) text = text.slice(0, at) + needle + text.slice(at + needle.length);
	return text;
};
for (const shift of [-1, 0, 1]) {
	const after = SPAN - 1 + 129 + SPAN + shift;
	const fromEnd = random2.length - 129 - SPAN + shift;
	const text = plant(random2, needle129, [SPAN + shift, after, fromEnd]);
	matches[`edges${shift}`] = searches(`window edges ${shift}`, text, needle129, true);
}

// Needles longer than the prefix a window looks for: copies and near misses in random text,
// and a prefix that occurs all along a stretch of the text.
const needle300 = randomText(300, "ab");
const nearMiss = needle300.slice(0, 299) + (needle300[299] === "a" ? "b" : "a");
const random3 = randomText(16000, "ab");
const planted = [random3.slice(0, 5000), needle300, random3.slice(5000, 8000), nearMiss, needle300, random3.slice(8000), needle300.slice(0, 150)].join("");
matches.planted = searches("planted", planted, needle300, true);
matches.nearMiss = searches("planted near miss", planted, nearMiss, true);
const prefixed = "a".repeat(400) + "b";
matches.longPrefix = searches("long prefix", random3.slice(0, 9000) + "a".repeat(3000) + prefixed + random3.slice(9000, 10000), prefixed, true);

// A window finds the prefix of "a" * 300 + "b" all along a run of "a", and searches for the
// whole needle over the next 2 ** 20 / 301 = 3483 start positions: the match starts just
// after them. Backwards, the last prefix is 3483 positions past a match.
const filler = "c".repeat(12000);
const forward = filler.slice(0, 5000) + "a".repeat(3483 + 300) + "b" + filler.slice(5000);
matches.afterRun = searches("just after a run", forward, "a".repeat(300) + "b", true);
const backNeedle = "b" + "a".repeat(300);
const backward = filler.slice(0, 5000) + backNeedle + "c".repeat(3483 - 301) + "b" + "a".repeat(255) + filler.slice(5000);
matches.beforeRun = searches("just before a run", backward, backNeedle, true);

// A needle longer than a window's comparisons, checked piece by piece: found, failing in its
// last piece just before a "b", and failing in its first piece everywhere.
const huge = "a".repeat(2 ** 20 + 8) + "b" + "aa";
matches.huge = searches("huge needle", huge, "a".repeat(2 ** 20 + 5), true);
matches.hugeAbsent = searches("huge needle, absent", "a".repeat(2 ** 20 + 320), "a".repeat(300) + "b" + "a".repeat(2 ** 20), true);

// UTF-16: wide characters, surrogate pairs, lone surrogates, and needles that cut a pair.
const wide = randomText(35000, ["a", "é", "😀", "b", "\ud83d"]);
matches.wide = searches("wide", wide + wide.slice(1000, 1129), wide.slice(1000, 1129), true);
matches.wideCut = searches("wide, cut pair", wide, wide.slice(wide.indexOf("😀") + 1, wide.indexOf("😀") + 130), true);

return { checks, failures, matches };
