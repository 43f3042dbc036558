// The sandbox's wrapped string built-ins on odd arguments: conversions (once each, in the
// built-in's order), positions out of range, limits, `$` patterns, function replacers,
// objects with their own `Symbol.split` or `Symbol.replace`, UTF-16, the errors they throw,
// and long repeats and pads against a plain reference. Returns JSON text: the test compares
// it with what Node answers for the same script.
const r = [];
const t = "abcabc😀é$x";
const at = { valueOf: () => 3 };
r.push(t.indexOf("c", at), t.indexOf("c", "4"), t.indexOf("", 99), t.indexOf("bc", -Infinity), t.indexOf(undefined), "undefined!".indexOf());
r.push(t.indexOf("\ud83d"), t.indexOf("\ude00", 7));
r.push(t.lastIndexOf("c", at), t.lastIndexOf("c", NaN), t.lastIndexOf("a", -3), t.lastIndexOf(""), t.lastIndexOf("", 4));
r.push(t.lastIndexOf("abc", 3.9), t.lastIndexOf("x", undefined));
r.push(t.includes("😀"), t.includes("c", 6), t.includes("", 50), "null".includes(null));
r.push(t.split("c", 2), t.split("c", "1"), t.split("c", -1), t.split("c", 2 ** 32 + 1), t.split("c", NaN), t.split(""), t.split("", 3));
r.push(t.split(), t.split(undefined, 0), "".split(""), "".split("x"), "a,b,".split(","), t.split("abc"));
r.push(t.replace("c", "[$&|$$|$`|$'|$0|$1|$<n>|$]"), t.replace("c", "$"), t.replace("zz", "Q"), t.replace("", "_"));
r.push(t.replace("c", (...a) => a.length + ":" + a.join("/")), t.replace("c", () => ({ toString: () => "T" })));
r.push(t.replaceAll("c", "<$&$'>"), t.replaceAll("", "."), t.replaceAll("bc", (m, i, s) => i + s.length), t.replaceAll("😀", "$`"));
r.push("aaaa".replaceAll("aa", "b"), t.replaceAll(/c/g, "C"), t.replace(/(b)(c)/, "$2$1"), t.split(/(c)/));
const regexpLike = { [Symbol.split]: (s, l) => "split " + s + " " + l, [Symbol.replace]: (s, v) => "replace " + s + " " + v };
r.push(t.split(regexpLike, 3), t.replace(regexpLike, "v"), t.replaceAll({ [Symbol.replace]: () => "all" }, "v"));
const errors = [];
for (const f of [
	() => t.replaceAll(/c/, "C"),
	() => t.includes(/c/),
	() => String.prototype.indexOf.call(null, "a"),
	() => String.prototype.split.call(undefined, ","),
	() => t.indexOf(Symbol()),
	() => t.split("c", Symbol()),
	() => t.replaceAll({ [Symbol.match]: true, flags: undefined }, "x"),
	() => "x".repeat(Infinity),
	() => "x".repeat(-1),
	() => "ab".repeat(2 ** 30),
	() => "x".padEnd(2 ** 31),
	() => String.prototype.repeat.call(null, 2),
]) {
	try {
		r.push(f());
	} catch (e) {
		errors.push(e.constructor.name);
	}
}
// Long repeats and pads, against copies joined by `Array.prototype.join`.
const copies = (text, count) => new Array(count + 1).join(text);
const padding = (filler, length) => copies(filler, Math.ceil(length / filler.length) + 1).slice(0, length);
const long = [];
for (const text of ["x", "ab", "😀", "é.", "q".repeat(4095)]) {
	for (const count of [8191, 8192, 8193, 100003]) {
		if (text.length * count < 2 ** 24) long.push(text.repeat(count) === copies(text, count));
	}
}
for (const text of ["", "x", "abc"]) {
	for (const [length, filler] of [[9000, undefined], [9000, "😀"], [100003, "abc"], [100003, "xyz".repeat(2000)], [8195, "-"]]) {
		const pad = padding(filler === undefined ? " " : filler, length - text.length);
		long.push(text.padStart(length, filler) === pad + text, text.padEnd(length, filler) === text + pad);
	}
}
const order = [];
const spy = (name, value) => ({
	toString() {
		order.push(name);
		return value;
	},
	valueOf() {
		order.push(name + "#");
		return value;
	},
});
"x".indexOf.call(spy("this", "abc"), spy("search", "b"), spy("position", "0"));
String.prototype.split.call(spy("this", "a-b-c"), spy("separator", "-"), spy("limit", "2"));
String.prototype.replace.call(spy("this", "abc"), spy("search", "b"), spy("replacement", "B"));
String.prototype.lastIndexOf.call(spy("this", "abc"), spy("search", "b"), spy("position", "0"));
String.prototype.includes.call(spy("this", "abc"), spy("search", "b"), spy("position", "0"));
String.prototype.repeat.call(spy("this", "ab"), spy("count", 3));
String.prototype.padEnd.call(spy("this", "ab"), spy("length", 9000), spy("filler", "xy"));
String.prototype.padStart.call(spy("this", "ab"), spy("length", 1), spy("filler", "xy"));
const shapes = ["indexOf", "lastIndexOf", "includes", "split", "replace", "replaceAll", "repeat", "padStart", "padEnd"].map(
	(name) => `${String.prototype[name].name}/${String.prototype[name].length}`,
);
return JSON.stringify({ r, errors, long, order, shapes });
