// Evaluated in each fresh VM before the script. Evaluates to a function
// (bridge, toolsJson, globalsJson, storeJson) => { settle, run, stalled }.
//
// `bridge(kind, a, b, c, d)` reaches the host with five strings:
//   "call" | "global", id, name, argsJson, "+" (or "", "-" without arguments)
//   "output", "text" | "console" | "image", data, mimeType, ""
//   "done", "ok" | "error", valueJson ("" for undefined) or errorJson, writesJson, ""
// The bridge lives in this closure only: scripts cannot reach it.
(function (bridge, toolsJson, globalsJson, storeJson) {
	"use strict";

	// Text reaches the host as Unicode: a lone surrogate (which pi prints and returns as it is)
	// becomes U+FFFD, the nearest a Rust string holds.
	const toWellFormed = String.prototype.toWellFormed;
	const callBridge = bridge;
	bridge = (...parts) => callBridge(...parts.map((part) => Reflect.apply(toWellFormed, part, [])));

	// QuickJS checks for an interrupt (the time limit, the interrupt budget, an abort) once per
	// 10,000 engine steps, and most built-ins run to their end in C without a check: a loop of
	// calls that each take milliseconds went hours between checks, and a call that visits
	// every index of `new Array(2 ** 32 - 1)` took minutes on its own. So the built-ins whose
	// work grows with their input are wrapped: an array-like longer than the heap can hold as
	// elements is refused where a call would visit each index, and every call is charged one
	// engine step per unit of its work (about a microsecond), which brings the next check as
	// soon as the work since the last one adds up to about ten milliseconds.
	(function boundBuiltins() {
		const apply = Reflect.apply;
		// 256 MiB of heap holds at most 2 ** 24 elements of 16 bytes.
		const MAX_ELEMENTS = 16777216;
		const ELEMENTS_PER_STEP = 256;
		const CHARS_PER_STEP = 4096;
		// Past this, sorts compare in JavaScript, where each comparison is a step.
		const NATIVE_SORT_MAX = 65536;
		const charge = (units) => {
			for (let steps = units; steps >= 1; steps--);
		};
		// A step is about a microsecond of work, but not every call's: a hole of an array is
		// looked up through the prototypes (60 ns a hole in a release build), and a debug
		// build reads a string one character at a time (30 ns each), so a loop of such calls
		// went a second between polls. A call with more than TIMED_WORK units of work also
		// brings a poll, of POLL_STEPS steps (QuickJS polls once per 10,000), once POLL_MS
		// have passed since the last one it brought.
		const POLL_MS = 10;
		const POLL_STEPS = 10000;
		const TIMED_WORK = 65536;
		const now = performance.now;
		let polled = apply(now, performance, []);
		const pollIfDue = () => {
			const time = apply(now, performance, []);
			if (time - polled >= POLL_MS) {
				charge(POLL_STEPS);
				polled = time;
			}
		};
		// A native call of `units` of work, charged before and timed after.
		const charged = (units, perStep, native, receiver, args) => {
			charge(units / perStep);
			const result = apply(native, receiver, args);
			if (units > TIMED_WORK) pollIfDue();
			return result;
		};
		const lengthOf = (value) => {
			const length = Math.trunc(Number(Object(value).length));
			return length > 0 ? Math.min(length, Number.MAX_SAFE_INTEGER) : 0;
		};
		const wrap = (owner, name, call) => {
			const native = owner[name];
			if (typeof native !== "function") return;
			const wrapped = {
				[name](...args) {
					return call(native, this, args);
				},
			}[name];
			Object.defineProperty(wrapped, "length", { value: native.length });
			Object.defineProperty(owner, name, { value: wrapped });
		};
		const elementWork = (owner, label, names, sortsByDefault) => {
			for (const name of names) {
				wrap(owner, name, (native, receiver, args) => {
					let length;
					try {
						length = lengthOf(receiver);
						if (name === "concat") for (const arg of args) if (Array.isArray(arg)) length += lengthOf(arg);
					} catch {
						// The built-in throws its own error for this receiver.
						return apply(native, receiver, args);
					}
					if (length > MAX_ELEMENTS) {
						throw new RangeError(
							label + "." + name + ": length " + length + " is more than the " + MAX_ELEMENTS + " elements the sandbox's heap can hold",
						);
					}
					if (sortsByDefault && (name === "sort" || name === "toSorted") && args[0] === undefined && length > NATIVE_SORT_MAX) {
						return charged(length, ELEMENTS_PER_STEP, native, receiver, [sortsByDefault]);
					}
					return charged(length, ELEMENTS_PER_STEP, native, receiver, args);
				});
			}
		};
		// The spec's default orders: as strings for arrays, as numbers for typed arrays.
		const byString = (a, b) => {
			const x = `${a}`;
			const y = `${b}`;
			return x < y ? -1 : x > y ? 1 : 0;
		};
		const byNumber = (a, b) => {
			if (a !== a) return b !== b ? 0 : 1;
			if (b !== b) return -1;
			if (a < b) return -1;
			if (a > b) return 1;
			if (a === 0 && b === 0 && typeof a === "number") return Object.is(a, -0) ? (Object.is(b, -0) ? 0 : -1) : Object.is(b, -0) ? 1 : 0;
			return 0;
		};
		elementWork(
			Array.prototype,
			"Array.prototype",
			["join", "toLocaleString", "reverse", "toReversed", "sort", "toSorted", "splice", "toSpliced", "slice", "concat", "copyWithin", "fill", "flat", "flatMap", "with", "shift", "unshift"],
			byString,
		);
		const TypedArray = Object.getPrototypeOf(Int8Array);
		elementWork(
			TypedArray.prototype,
			"TypedArray.prototype",
			["join", "toLocaleString", "reverse", "toReversed", "sort", "toSorted", "slice", "fill", "copyWithin", "indexOf", "lastIndexOf", "includes", "set", "with"],
			byNumber,
		);
		// Strings: charged by the receiver's and the string arguments' length.
		const textLength = (receiver, args) => {
			let chars = typeof receiver === "string" ? receiver.length : 0;
			for (const arg of args) if (typeof arg === "string") chars += arg.length;
			return chars;
		};
		const textWork = (names) => {
			for (const name of names) {
				wrap(String.prototype, name, (native, receiver, args) =>
					charged(textLength(receiver, args), CHARS_PER_STEP, native, receiver, args),
				);
			}
		};
		// Not the calls that read a character or compare a prefix: they cost little, and loops
		// call them once per character. The searches, repeats and pads are bounded apart, below.
		textWork([
			"concat", "isWellFormed", "localeCompare", "match", "matchAll", "normalize", "search", "toLowerCase",
			"toUpperCase", "toLocaleLowerCase", "toLocaleUpperCase", "toWellFormed", "trim", "trimStart", "trimEnd",
		]);
		boundSearches(wrap, charge, pollIfDue, textLength, CHARS_PER_STEP);
		boundRepeats(wrap, charged, CHARS_PER_STEP);
		// JSON: parsing is charged by its text; writing by what it wrote.
		wrap(JSON, "parse", (native, receiver, args) =>
			charged(typeof args[0] === "string" ? args[0].length : 0, CHARS_PER_STEP, native, receiver, args),
		);
		wrap(JSON, "stringify", (native, receiver, args) => {
			const json = apply(native, receiver, args);
			if (typeof json === "string") {
				charge(json.length / CHARS_PER_STEP);
				if (json.length > TIMED_WORK) pollIfDue();
			}
			return json;
		});
	})();

	// Repeating and padding, charged by their result. QuickJS writes a short string's copies
	// one character or one copy at a time, with no interrupt check: `"x".repeat(2 ** 27)` took
	// over a second in a debug build, and a loop of them kept a core busy. So a long result
	// is written from a piece of at least PIECE characters in long copies: `padEnd` with the
	// piece as its filler writes the copies in one call, and a filler repeats to the length
	// asked whatever its own length, so the result is the built-in's. Arguments are converted
	// once, in the built-in's order; the natives get primitives. A count or a length the
	// built-in refuses goes to it as it is, for its error.
	function boundRepeats(wrap, charged, CHARS_PER_STEP) {
		const apply = Reflect.apply;
		const { repeat, padEnd } = String.prototype;
		const PIECE = 4096;
		// QuickJS's longest string.
		const MAX_LENGTH = 1073741823;
		const toText = (value) => (typeof value === "string" ? value : `${value}`);
		// The spec's ToNumber, truncated, with the built-ins' own errors (unary plus has its
		// own message for a BigInt).
		const truncated = Math.trunc;
		// NaN is 0, as the spec's ToIntegerOrInfinity has it.
		const integer = (number) => (number !== number ? 0 : number);
		// `text` repeated to at least PIECE characters.
		const piece = (text) => apply(repeat, text, [Math.ceil(PIECE / text.length)]);
		// A call making a string of `length`, charged by it (a length past the longest string
		// fails at once).
		const making = (length, native, text, args) => charged(Math.min(length, MAX_LENGTH), CHARS_PER_STEP, native, text, args);

		wrap(String.prototype, "repeat", (native, receiver, args) => {
			if (receiver === undefined || receiver === null) return apply(native, receiver, args);
			const text = toText(receiver);
			const count = truncated(args[0]);
			const length = text.length * integer(count);
			const long = text.length < PIECE && length >= 2 * PIECE && length <= MAX_LENGTH;
			if (!long) return making(Math.max(text.length, length), native, text, [count]);
			return making(length, padEnd, text, [length, piece(text)]);
		});
		const pad = (native, receiver, args) => {
			if (receiver === undefined || receiver === null) return apply(native, receiver, args);
			const text = toText(receiver);
			const target = truncated(args[0]);
			const length = integer(target);
			if (length <= text.length) return apply(native, text, [target]);
			const filler = args[1] === undefined ? " " : toText(args[1]);
			const long = filler.length > 0 && filler.length < PIECE && length - text.length >= 2 * PIECE && length <= MAX_LENGTH;
			return making(length, native, text, [target, long ? piece(filler) : filler]);
		};
		wrap(String.prototype, "padStart", pad);
		wrap(String.prototype, "padEnd", pad);
	}

	// The string searches (indexOf, lastIndexOf, includes, split, replace, replaceAll).
	// QuickJS's search is naive: one call compares up to (start positions × needle length)
	// characters with no interrupt check, so a long needle made one call take hours
	// (`'a'.repeat(2 ** 24).indexOf('a'.repeat(2 ** 16) + 'b')`) and kept a core busy long
	// after the time limit. A search whose worst case is at most NATIVE_COMPARES runs in one
	// native call, charged by its text like the other string built-ins. A larger one runs in
	// windows of the text, each a native call of at most WINDOW_COMPARES comparisons, charged
	// one by one, so the time limit ends it within milliseconds. The answers are the native
	// ones: arguments are converted once, in the built-in's order (receiver, search, position
	// or limit, then the replacement), and the natives then get primitives that convert to
	// themselves; an object with its own `Symbol.split` or `Symbol.replace` method (a RegExp)
	// and a RegExp given to `includes` go to the built-in as they are.
	function boundSearches(wrap, charge, pollIfDue, textLength, CHARS_PER_STEP) {
		const apply = Reflect.apply;
		const { indexOf, lastIndexOf, replace, slice, split, startsWith } = String.prototype;
		const join = Array.prototype.join;
		const sourceOf = Object.getOwnPropertyDescriptor(RegExp.prototype, "source").get;
		// About 150 ms of comparisons in a debug build, a few in a release build: a split of
		// 4 MB of text at "\r\n" stays one native call.
		const NATIVE_COMPARES = 4194304;
		const WINDOW_COMPARES = 1048576;
		// A window looks for the needle's first PREFIX characters, which keeps its copy small
		// beside its text, and checks each hit against the rest of the needle.
		const PREFIX = 256;
		// A search's native calls are charged by the characters they copy and read, but their
		// comparisons, mostly few and at worst many, are timed instead (`pollIfDue`): charging
		// each call its worst case made a search for a 1,000-character needle in 1 MB of text
		// 70 times slower. Searches whose worst case (characters read and compared) is smaller
		// than this are not timed.
		const TIMED_WORK = 65536;
		// `${}` is the spec's ToString, as the built-ins convert their receiver and arguments,
		// and `Math.trunc` its ToNumber, truncated, with the built-ins' own errors (unary plus
		// has its own message for a BigInt).
		const toText = (value) => (typeof value === "string" ? value : `${value}`);
		const truncated = Math.trunc;
		const toInteger = (value) => {
			const number = truncated(value);
			return number !== number ? 0 : number;
		};
		const clamp = (index, length) => Math.min(Math.max(index, 0), length);
		const isObject = (value) => (typeof value === "object" && value !== null) || typeof value === "function";
		const present = (value) => value !== undefined && value !== null;
		const coercible = present;
		// The spec's IsRegExp: `Symbol.match` if the object has one, else whether it is a RegExp
		// (whose `source` getter throws for anything else).
		const isRegExp = (value) => {
			if (!isObject(value)) return false;
			const matcher = value[Symbol.match];
			if (matcher !== undefined) return !!matcher;
			try {
				apply(sourceOf, value, []);
				return true;
			} catch {
				return false;
			}
		};
		// The most characters one native search of a needle compares in a text.
		const compares = (textLength, needleLength) =>
			needleLength < 2 || needleLength > textLength ? 0 : (textLength - needleLength + 1) * (needleLength - 1);
		const windowed = (text, needle) => compares(text.length, needle.length) > NATIVE_COMPARES;
		// A native search in one call: charged by its text, timed when it may take long.
		const nativeSearch = (native, text, args, needle) => {
			charge((text.length + needle.length) / CHARS_PER_STEP);
			const result = apply(native, text, args);
			if (text.length + compares(text.length, needle.length) > TIMED_WORK) pollIfDue();
			return result;
		};

		// Where a windowed search looks. It scans windows of `span` start positions for the
		// needle's prefix (each window's text is `span` and the prefix's length, less one,
		// characters); where the prefix occurs, it searches for the whole needle natively over
		// the next `run` start positions, or checks that one position piece by piece when the
		// needle alone is longer than WINDOW_COMPARES (`run` 0).
		const plan = (needle) => {
			const prefixLength = Math.min(needle.length, PREFIX);
			return {
				prefix: prefixLength === needle.length ? needle : apply(slice, needle, [0, prefixLength]),
				prefixLength,
				span: Math.floor(WINDOW_COMPARES / prefixLength),
				run: Math.floor(WINDOW_COMPARES / needle.length),
				pieces: undefined,
			};
		};
		// The needle in pieces of at most WINDOW_COMPARES characters, each one `startsWith` call.
		const matchesAt = (text, needle, search, at) => {
			if (search.pieces === undefined) {
				search.pieces = [];
				for (let offset = 0; offset < needle.length; offset += WINDOW_COMPARES) {
					search.pieces.push(apply(slice, needle, [offset, offset + WINDOW_COMPARES]));
				}
			}
			let offset = at;
			for (const piece of search.pieces) {
				const matches = apply(startsWith, text, [piece, offset]);
				pollIfDue();
				if (!matches) return false;
				offset += piece.length;
			}
			return true;
		};
		// A window's native search for the prefix, from `from`.
		const scan = (native, window, prefix, from) => {
			const hit = apply(native, window, [prefix, from]);
			pollIfDue();
			return hit;
		};
		// The native search of `native` (indexOf or lastIndexOf) for `needle` among the start
		// positions `first` to `last` of `text`: the position, or -1.
		const searchAmong = (native, text, needle, first, last) => {
			const window = apply(slice, text, [first, last + needle.length]);
			charge(window.length / CHARS_PER_STEP);
			const at = apply(native, window, [needle]);
			pollIfDue();
			return at === -1 ? -1 : first + at;
		};
		// The first start at or after `from` (0 to the text's length) where the needle occurs,
		// or -1. With `each`, every match that does not overlap the one before goes to `each`,
		// in order, until it returns true.
		const searchForward = (text, needle, from, each) => {
			const search = plan(needle);
			const lastStart = text.length - needle.length;
			for (let first = from; first <= lastStart; ) {
				const last = Math.min(first + search.span - 1, lastStart);
				const window = apply(slice, text, [first, last + search.prefixLength]);
				charge(window.length / CHARS_PER_STEP);
				let next = last + 1;
				for (let hit = scan(indexOf, window, search.prefix, 0); hit !== -1; ) {
					const at = first + hit;
					let match = -1;
					let resume = at + 1;
					if (search.prefixLength === needle.length || (search.run === 0 && matchesAt(text, needle, search, at))) {
						match = at;
					} else if (search.run > 0) {
						const end = Math.min(at + search.run - 1, lastStart);
						match = searchAmong(indexOf, text, needle, at, end);
						resume = end + 1;
					}
					if (match !== -1) {
						if (each === undefined || each(match)) return match;
						resume = match + needle.length;
					}
					if (resume > last) {
						next = resume;
						break;
					}
					hit = scan(indexOf, window, search.prefix, resume - first);
				}
				first = next;
			}
			return -1;
		};
		// The last start at or before `from` (0 to the text's length), or -1.
		const searchBackward = (text, needle, from) => {
			const search = plan(needle);
			for (let last = Math.min(from, text.length - needle.length); last >= 0; ) {
				const first = Math.max(last - search.span + 1, 0);
				const window = apply(slice, text, [first, last + search.prefixLength]);
				charge(window.length / CHARS_PER_STEP);
				let next = first - 1;
				for (let hit = scan(lastIndexOf, window, search.prefix, window.length); hit !== -1; ) {
					const at = first + hit;
					if (search.prefixLength === needle.length) return at;
					let resume;
					if (search.run === 0) {
						if (matchesAt(text, needle, search, at)) return at;
						resume = at - 1;
					} else {
						const start = Math.max(at - search.run + 1, 0);
						const found = searchAmong(lastIndexOf, text, needle, start, at);
						if (found !== -1) return found;
						resume = start - 1;
					}
					if (resume < first) {
						next = resume;
						break;
					}
					hit = scan(lastIndexOf, window, search.prefix, resume - first);
				}
				last = next;
			}
			return -1;
		};
		// The parts of `text` between the matches of a needle of at most PREFIX characters, in
		// native splits of windows of the text, so that a text with many matches costs about
		// what the built-in does. A window's split finds the matches that lie wholly inside it;
		// one across its end would start after its last match, so the next window starts there
		// (or where such a match could start, when there was none). Each window's parts that end
		// at a match go to `visit` with where the first of them starts, until it returns true;
		// the answer is where the last part starts, or -1 once `visit` stopped.
		const visitParts = (text, needle, visit) => {
			const span = Math.floor(WINDOW_COMPARES / needle.length);
			let partStart = 0;
			for (let first = 0; ; ) {
				const end = Math.min(first + span + needle.length - 1, text.length);
				const window = apply(slice, text, [first, end]);
				charge(window.length / CHARS_PER_STEP);
				const pieces = apply(split, window, [needle]);
				pollIfDue();
				if (pieces.length > 1) {
					const tail = pieces.pop();
					if (partStart < first) pieces[0] = apply(slice, text, [partStart, first + pieces[0].length]);
					if (visit(pieces, partStart)) return -1;
					partStart = end - tail.length;
				}
				if (end === text.length) return partStart;
				first = Math.max(partStart, end - needle.length + 1);
			}
		};
		// The parts of `text` between non-overlapping matches of a windowed needle, at most `max`.
		const splitWindowed = (text, needle, max) => {
			if (needle.length <= PREFIX) {
				const chunks = [];
				let count = 0;
				const lastStart = visitParts(text, needle, (pieces) => {
					chunks.push(pieces);
					count += pieces.length;
					return count >= max;
				});
				const parts = [].concat(...chunks);
				if (lastStart === -1) parts.length = max;
				else parts.push(apply(slice, text, [lastStart]));
				return parts;
			}
			const parts = [];
			let start = 0;
			searchForward(text, needle, 0, (at) => {
				parts.push(apply(slice, text, [start, at]));
				start = at + needle.length;
				return parts.length === max;
			});
			if (parts.length < max) parts.push(apply(slice, text, [start]));
			return parts;
		};

		// A search of a string in a string whose other arguments are primitives, which the
		// built-in converts without side effects: when it is not windowed, it goes to the
		// built-in as it is (the common case, and the quickest).
		const primitive = (value) => value === null || (typeof value !== "object" && typeof value !== "function");
		const direct = (receiver, args) =>
			typeof receiver === "string" && typeof args[0] === "string" && primitive(args[1]) && !windowed(receiver, args[0]);

		wrap(String.prototype, "indexOf", (native, receiver, args) => {
			if (direct(receiver, args)) return nativeSearch(native, receiver, args, args[0]);
			if (!coercible(receiver)) return apply(native, receiver, args);
			const text = toText(receiver);
			const needle = toText(args[0]);
			const from = clamp(toInteger(args[1]), text.length);
			if (windowed(text, needle)) return searchForward(text, needle, from);
			return nativeSearch(native, text, [needle, from], needle);
		});
		wrap(String.prototype, "includes", (native, receiver, args) => {
			if (direct(receiver, args)) return nativeSearch(native, receiver, args, args[0]);
			if (!coercible(receiver)) return apply(native, receiver, args);
			const text = toText(receiver);
			if (isRegExp(args[0])) throw new TypeError("regexp not supported");
			const needle = toText(args[0]);
			const from = clamp(toInteger(args[1]), text.length);
			if (windowed(text, needle)) return searchForward(text, needle, from) !== -1;
			return nativeSearch(native, text, [needle, from], needle);
		});
		wrap(String.prototype, "lastIndexOf", (native, receiver, args) => {
			if (direct(receiver, args)) return nativeSearch(native, receiver, args, args[0]);
			if (!coercible(receiver)) return apply(native, receiver, args);
			const text = toText(receiver);
			const needle = toText(args[0]);
			const position = truncated(args[1]);
			const from = position !== position ? text.length : clamp(position, text.length);
			if (windowed(text, needle)) return searchBackward(text, needle, from);
			return nativeSearch(native, text, [needle, from], needle);
		});
		wrap(String.prototype, "split", (native, receiver, args) => {
			if (direct(receiver, args)) return nativeSearch(native, receiver, args, args[0]);
			const separator = args[0];
			const limit = args[1];
			if (!coercible(receiver)) return apply(native, receiver, args);
			if (isObject(separator)) {
				const splitter = separator[Symbol.split];
				if (present(splitter)) {
					charge(textLength(receiver, args) / CHARS_PER_STEP);
					return apply(splitter, separator, [receiver, limit]);
				}
			}
			const text = toText(receiver);
			const max = limit === undefined ? 4294967295 : truncated(limit) >>> 0;
			const delimiter = toText(separator);
			if (separator === undefined || max === 0 || !windowed(text, delimiter)) {
				return nativeSearch(native, text, [separator === undefined ? undefined : delimiter, max], delimiter);
			}
			return splitWindowed(text, delimiter, max);
		});
		// GetSubstitution for a string search, which has no captures: `$$`, `$&`, `` $` `` and
		// `$'`; every other `$` stays as it is.
		const SUBSTITUTION = /\$[$&`']/g;
		const substitute = (template, text, matched, at) => {
			if (apply(indexOf, template, ["$"]) === -1) return template;
			return apply(replace, template, [
				SUBSTITUTION,
				(ref) => {
					if (ref === "$$") return "$";
					if (ref === "$&") return matched;
					if (ref === "$`") return apply(slice, text, [0, at]);
					return apply(slice, text, [at + matched.length]);
				},
			]);
		};
		// Every match of a windowed needle replaced: one value for all when the replacement
		// does not depend on where the match is (the common case, joined natively), else the
		// value for each match in turn, as the built-in computes them.
		const replaceAllWindowed = (text, needle, replacement, functional) => {
			const positional =
				functional || apply(indexOf, replacement, ["$`"]) !== -1 || apply(indexOf, replacement, ["$'"]) !== -1;
			const valueAt = (at) =>
				functional ? toText(replacement(needle, at, text)) : substitute(replacement, text, needle, at);
			const out = [];
			if (needle.length <= PREFIX) {
				const value = positional ? "" : substitute(replacement, text, needle, 0);
				const lastStart = visitParts(text, needle, (pieces, start) => {
					if (!positional) {
						out.push(apply(join, pieces, [value]), value);
						return false;
					}
					const values = [];
					let at = start;
					for (const piece of pieces) {
						at += piece.length;
						values.push(piece, valueAt(at));
						at += needle.length;
					}
					out.push(apply(join, values, [""]));
					return false;
				});
				out.push(apply(slice, text, [lastStart]));
				return apply(join, out, [""]);
			}
			let end = 0;
			searchForward(text, needle, 0, (at) => {
				out.push(apply(slice, text, [end, at]), valueAt(at));
				end = at + needle.length;
				return false;
			});
			out.push(apply(slice, text, [end]));
			return apply(join, out, [""]);
		};
		const replaceText = (native, receiver, args, all) => {
			if (direct(receiver, args)) {
				if (typeof args[1] === "string") charge(args[1].length / CHARS_PER_STEP);
				return nativeSearch(native, receiver, args, args[0]);
			}
			const search = args[0];
			const replacement = args[1];
			if (!coercible(receiver)) return apply(native, receiver, args);
			if (isObject(search)) {
				if (all && isRegExp(search)) {
					const flags = search.flags;
					if (!present(flags)) throw new TypeError("cannot convert to object");
					if (apply(indexOf, toText(flags), ["g"]) === -1) throw new TypeError("regexp must have the 'g' flag");
				}
				const replacer = search[Symbol.replace];
				if (present(replacer)) {
					charge(textLength(receiver, args) / CHARS_PER_STEP);
					return apply(replacer, search, [receiver, replacement]);
				}
			}
			const text = toText(receiver);
			const needle = toText(search);
			const functional = typeof replacement === "function";
			const template = functional ? replacement : toText(replacement);
			if (!windowed(text, needle)) {
				if (!functional) charge(template.length / CHARS_PER_STEP);
				return nativeSearch(native, text, [needle, template], needle);
			}
			if (all) return replaceAllWindowed(text, needle, template, functional);
			const at = searchForward(text, needle, 0);
			if (at === -1) return text;
			const value = functional ? toText(template(needle, at, text)) : substitute(template, text, needle, at);
			return apply(slice, text, [0, at]) + value + apply(slice, text, [at + needle.length]);
		};
		wrap(String.prototype, "replace", (native, receiver, args) => replaceText(native, receiver, args, false));
		wrap(String.prototype, "replaceAll", (native, receiver, args) => replaceText(native, receiver, args, true));
	}

	// Freeze what the built-in globals reach, so a script cannot change what this prelude relies
	// on. Properties that scripts commonly set on their own objects (an Error subclass's `name`)
	// become accessors that define an own property on the instance instead of failing.
	(function freezeBuiltins() {
		const overridable = new Set(["constructor", "name", "message", "toString", "toLocaleString", "valueOf", "toJSON"]);
		const visited = new Set([globalThis]);
		const todo = [];
		const visit = (value) => {
			const reachable = (typeof value === "object" && value !== null) || typeof value === "function";
			if (reachable && !visited.has(value)) {
				visited.add(value);
				todo.push(value);
			}
		};
		const makeOverridable = (owner, key, value, enumerable) => {
			const accessors = Object.getOwnPropertyDescriptor(
				{
					get property() {
						return value;
					},
					set property(next) {
						if (this === owner) {
							throw new TypeError("Cannot assign to read only property '" + String(key) + "' of a built-in");
						}
						if ((typeof this === "object" && this !== null) || typeof this === "function") {
							Object.defineProperty(this, key, { value: next, writable: true, enumerable: true, configurable: true });
						}
					},
				},
				"property",
			);
			Object.defineProperty(owner, key, { get: accessors.get, set: accessors.set, enumerable, configurable: false });
			visit(accessors.get);
			visit(accessors.set);
		};
		for (const key of Reflect.ownKeys(globalThis)) {
			const descriptor = Object.getOwnPropertyDescriptor(globalThis, key);
			visit(descriptor.value);
			visit(descriptor.get);
			visit(descriptor.set);
			if ("value" in descriptor && descriptor.configurable) {
				Object.defineProperty(globalThis, key, { writable: false, configurable: false });
			}
		}
		// Intrinsics reachable only from instances.
		visit(Object.getPrototypeOf(function* () {}));
		visit(Object.getPrototypeOf(async function () {}));
		visit(Object.getPrototypeOf(async function* () {}));
		visit(Object.getPrototypeOf(Int8Array));
		visit(Object.getPrototypeOf([][Symbol.iterator]()));
		visit(Object.getPrototypeOf(new Map()[Symbol.iterator]()));
		visit(Object.getPrototypeOf(new Set()[Symbol.iterator]()));
		visit(Object.getPrototypeOf(""[Symbol.iterator]()));
		visit(Object.getPrototypeOf(/a/[Symbol.matchAll]("")));
		if (typeof Iterator === "function") {
			if (typeof Iterator.prototype.map === "function") visit(Object.getPrototypeOf([].values().map((x) => x)));
			if (typeof Iterator.from === "function") visit(Object.getPrototypeOf(Iterator.from({ next() {} })));
		}
		while (todo.length > 0) {
			const object = todo.pop();
			visit(Object.getPrototypeOf(object));
			const descriptors = Object.getOwnPropertyDescriptors(object);
			for (const key of Reflect.ownKeys(descriptors)) {
				const descriptor = descriptors[key];
				if (!("value" in descriptor)) {
					visit(descriptor.get);
					visit(descriptor.set);
					continue;
				}
				visit(descriptor.value);
				const replaceable = descriptor.writable && descriptor.configurable;
				if (replaceable && (object === Object.prototype || overridable.has(key))) {
					makeOverridable(object, key, descriptor.value, descriptor.enumerable);
				}
			}
			Object.freeze(object);
		}
	})();

	const stringify = JSON.stringify;
	const parse = JSON.parse;
	const then = Promise.prototype.then;
	const BaseError = Error;
	const BaseTypeError = TypeError;
	const BaseRangeError = RangeError;
	const waiting = new Map();
	let lastId = 0;
	let settled = false;
	// Thrown by exit() to unwind a script that already reported success.
	const EXIT = Object.freeze({});

	function finish(ok, payload, writes) {
		if (settled) return;
		settled = true;
		bridge("done", ok ? "ok" : "error", payload === undefined ? "" : payload, writes === undefined ? "" : writes, "");
	}

	// "Name: message" and the stack's frames, this prelude's frames left out.
	function errorText(error) {
		const head = error.message ? error.name + ": " + error.message : String(error.name);
		const frames =
			typeof error.stack === "string"
				? error.stack.split("\n").filter((line) => line.trim() && !line.includes("codemode-prelude.js"))
				: [];
		return [head, ...frames].join("\n");
	}

	function format(value) {
		if (typeof value === "string") return value;
		if (value instanceof BaseError) return errorText(value);
		if (typeof value === "number") return String(value);
		try {
			const json = stringify(value);
			return json === undefined ? String(value) : json;
		} catch {
			return String(value);
		}
	}

	function describeError(error) {
		try {
			if (error instanceof BaseError) {
				return stringify({ name: String(error.name), message: String(error.message), stack: errorText(error) });
			}
			return stringify({ message: String(format(error)) });
		} catch {
			return stringify({ message: "The script threw a value that cannot be described" });
		}
	}

	function caller(kind, name, spread) {
		return (...args) =>
			new Promise((resolve, reject) => {
				let json;
				try {
					const value = spread ? args : args[0];
					json = value === undefined ? undefined : stringify(value);
				} catch (error) {
					reject(error);
					return;
				}
				lastId += 1;
				waiting.set(lastId, { resolve, reject });
				bridge(kind, String(lastId), name, json === undefined ? "" : json, json === undefined ? "-" : "+");
			});
	}

	const tools = Object.create(null);
	const allTools = [];
	for (const { name, jsName, description } of parse(toolsJson)) {
		const call = caller("call", name, false);
		// The first tool owns an identifier; a raw name is a key too while it is free.
		if (!(jsName in tools)) {
			tools[jsName] = call;
			allTools.push(Object.freeze({ name: jsName, description }));
		}
		if (!(name in tools)) tools[name] = call;
	}
	Object.freeze(tools);
	Object.freeze(allTools);

	// Reading a member that does not exist names the close matches; `in` still works.
	const comparable = (name) => name.toLowerCase().replace(/[^a-z0-9]/g, "");
	function guarded(target, label, names, hint) {
		return new Proxy(target, {
			get(object, key, receiver) {
				const known = typeof key !== "string" || key in object || key in Object.prototype;
				if (known || key === "then" || key === "toJSON") return Reflect.get(object, key, receiver);
				const wanted = comparable(key);
				let close = names.filter((name) => comparable(name) === wanted);
				if (close.length === 0) {
					close = names.filter((name) => wanted && (comparable(name).includes(wanted) || wanted.includes(comparable(name))));
				}
				let message = label + "." + key + " does not exist.";
				if (close.length > 0) {
					message += " Did you mean " + close.slice(0, 5).map((name) => label + "." + name).join(", ") + "?";
				} else if (names.length <= 20) {
					message += " Available: " + names.join(", ") + ".";
				}
				if (hint) message += " " + hint;
				message += ' Check for a member with "' + key + '" in ' + label + ".";
				throw new BaseTypeError(message);
			},
		});
	}
	const toolsProxy = guarded(
		tools,
		"tools",
		allTools.map((tool) => tool.name),
		"ALL_TOOLS lists every tool; searchTools(query) finds tools by topic.",
	);

	for (const { name, spread } of parse(globalsJson)) {
		Object.defineProperty(globalThis, name, { value: caller("global", name, spread), enumerable: true });
	}

	// key -> JSON text; sizes count the key's and the JSON's characters.
	const stored = new Map(Object.entries(parse(storeJson)));
	const written = new Map();
	let storedChars = 0;
	for (const [key, json] of stored) storedChars += key.length + json.length;
	const STORE_HINT =
		"store() is for small state such as IDs or summaries. Show images with image(), keep large data in variables, or write it to a file with a tool.";

	function requireKey(helper, key) {
		if (typeof key !== "string") throw new TypeError(helper + "() key must be a string");
	}

	function store(key, value) {
		requireKey("store", key);
		const before = stored.has(key) ? key.length + stored.get(key).length : 0;
		if (value === undefined) {
			stored.delete(key);
			storedChars -= before;
			written.set(key, undefined);
			return;
		}
		let json;
		try {
			json = stringify(value);
		} catch (error) {
			throw new TypeError("store(" + stringify(key) + ") value is not JSON-serializable: " + format(error));
		}
		if (json === undefined) throw new TypeError("store(" + stringify(key) + ") value is not JSON-serializable");
		if (json.length > 262144) {
			throw new RangeError(
				"store(" + stringify(key) + ") value has " + json.length + " characters of JSON, more than the limit of 262144. " + STORE_HINT,
			);
		}
		const after = storedChars - before + key.length + json.length;
		if (after > 1048576) {
			throw new RangeError(
				"store is full: stored values would exceed 1048576 characters of JSON. Delete keys with store(key, undefined). " + STORE_HINT,
			);
		}
		stored.set(key, json);
		storedChars = after;
		written.set(key, json);
	}

	function load(key) {
		requireKey("load", key);
		const json = stored.get(key);
		return json === undefined ? undefined : parse(json);
	}

	function writesJson() {
		const entries = [];
		for (const [key, json] of written) entries.push(json === undefined ? [key] : [key, json]);
		return stringify(entries);
	}

	let outputChars = 0;
	let outputItems = 0;

	// Past the limits the script fails; catching the error does not bring the output back.
	function output(kind, data, mimeType) {
		if (settled) return;
		outputChars += data.length;
		outputItems += 1;
		if (outputChars > 16777216 || outputItems > 100000) {
			const error = new BaseRangeError(
				"script output exceeded the limit of 16777216 characters or 100000 text(), image(), and console calls. " +
					"Print a summary instead, or write large data to a file with a tool.",
			);
			finish(false, describeError(error));
			throw error;
		}
		bridge("output", kind, data, mimeType === undefined ? "" : mimeType, "");
	}

	function text(value) {
		let rendered;
		try {
			if (value === undefined || value === null || (typeof value !== "object" && typeof value !== "function")) {
				rendered = String(value);
			} else {
				const json = stringify(value);
				rendered = json === undefined ? String(value) : json;
			}
		} catch (error) {
			throw new BaseTypeError(error instanceof BaseError ? error.message : String(error));
		}
		output("text", rendered);
	}

	const IMAGE_EXPECTS =
		'image expects a non-empty image URL string, an object with image_url, or an image block { type: "image", data, mimeType }';

	function imageUrl(value) {
		if (typeof value === "string") return value;
		if (typeof value !== "object" || value === null || Array.isArray(value)) throw new BaseTypeError(IMAGE_EXPECTS);
		if (value.image_url !== undefined) {
			if (typeof value.image_url !== "string") throw new BaseTypeError(IMAGE_EXPECTS);
			return value.image_url;
		}
		if (typeof value.type !== "string") throw new BaseTypeError(IMAGE_EXPECTS);
		if (value.type !== "image") throw new BaseTypeError('image only accepts image blocks, got "' + value.type + '"');
		if (typeof value.data !== "string" || value.data === "") throw new BaseTypeError("image expected image block data");
		return value.data.toLowerCase().startsWith("data:") ? value.data : "data:;base64," + value.data;
	}

	// The base64 of each accepted format's signature.
	const SIGNATURES = [
		["image/png", /^iVBORw0KGg/],
		["image/jpeg", /^[/]9j[/](?!9)/],
		["image/gif", /^R0lGOD[dl]h/],
		["image/webp", /^UklG.{8}RUJQ/],
	];

	function image(value) {
		const url = imageUrl(value);
		if (url === "") throw new BaseTypeError(IMAGE_EXPECTS);
		const colon = url.indexOf(":");
		const scheme = colon === -1 ? "" : url.slice(0, colon).toLowerCase();
		if (scheme === "http" || scheme === "https") {
			throw new BaseTypeError("remote image URLs are not supported in tool outputs. Pass a base64 data URI instead");
		}
		const comma = url.indexOf(",");
		const parameters = comma === -1 ? [] : url.slice(colon + 1, comma).split(";").slice(1);
		if (scheme !== "data" || comma === -1 || !parameters.some((part) => part.toLowerCase() === "base64")) {
			throw new BaseTypeError("invalid image output. Pass a base64 data URI instead");
		}
		const data = url.slice(comma + 1).replace(/\s+/g, "");
		if (data.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(data)) {
			throw new BaseTypeError("invalid image output. The image data is not valid base64 (truncated or corrupted?)");
		}
		const head = data.slice(0, 16);
		const signature = SIGNATURES.find(([, pattern]) => pattern.test(head));
		if (!signature) throw new BaseTypeError("invalid image output. The image data is not a PNG, JPEG, GIF, or WebP image");
		output("image", data, signature[0]);
	}

	function exit() {
		let writes;
		try {
			writes = writesJson();
		} catch (error) {
			finish(false, describeError(error));
			throw EXIT;
		}
		finish(true, undefined, writes);
		throw EXIT;
	}

	const consoleObject = {};
	for (const level of ["log", "info", "warn", "error", "debug"]) {
		consoleObject[level] = (...args) => output("console", args.map(format).join(" "));
	}
	Object.freeze(consoleObject);

	const globals = {
		tools: toolsProxy,
		ALL_TOOLS: allTools,
		console: consoleObject,
		text,
		image,
		exit,
		store,
		load,
	};
	for (const name of Object.keys(globals)) {
		Object.defineProperty(globalThis, name, { value: globals[name], enumerable: true });
	}

	return {
		describe: describeError,
		settle(id, ok, payload) {
			const entry = waiting.get(id);
			if (!entry) return;
			waiting.delete(id);
			if (!ok) {
				entry.reject(new BaseError(payload));
				return;
			}
			let value;
			try {
				value = payload === "" ? undefined : parse(payload);
			} catch (error) {
				entry.reject(error);
				return;
			}
			entry.resolve(value);
		},
		run(script) {
			let promise;
			try {
				promise = script(toolsProxy, consoleObject);
			} catch (error) {
				finish(false, describeError(error));
				return;
			}
			then.call(
				promise,
				(value) => {
					let json;
					try {
						json = value === undefined ? undefined : stringify(value);
					} catch (error) {
						finish(false, describeError(error));
						return;
					}
					finish(true, json, writesJson());
				},
				(error) => finish(false, describeError(error)),
			);
		},
		// With `check`, only whether the script waits for nothing; without, fail it for that.
		stalled(check) {
			if (settled || waiting.size > 0) return false;
			if (check) return true;
			finish(
				false,
				stringify({
					name: "Error",
					message:
						"The script is waiting on a promise that can never settle: no tool call is pending, and timers do not exist here.",
				}),
			);
			return true;
		},
	};
})
