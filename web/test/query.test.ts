import { describe, expect, test } from "vitest";
import { decode, defaults, encode, num, prune, type FieldDef } from "../src/lib/query";

const fields: FieldDef[] = [
  { key: "model", def: "llama-3.1-70b" },
  { key: "gpus", def: ["h100-sxm", "h200"] },
  { key: "rate_rps", def: "4" },
  { key: "prefix", def: true },
  { key: "profile", def: "" },
];

describe("query-string state", () => {
  test("an empty query is the defaults, and the defaults encode to nothing", () => {
    expect(decode("", fields)).toEqual(defaults(fields));
    expect(encode(defaults(fields), fields)).toBe("");
  });

  test.each([
    [{ rate_rps: "8" }, "?rate_rps=8"],
    [{ gpus: ["b200"] }, "?gpus=b200"],
    [{ gpus: [] }, "?gpus="],
    [{ prefix: false }, "?prefix=0"],
    [{ model: "meta-llama/Llama-3.1-8B", rate_rps: "2.5" }, "?model=meta-llama%2FLlama-3.1-8B&rate_rps=2.5"],
    [{ profile: "0:2;28800:9" }, "?profile=0:2;28800:9"],
    [{ model: "a&b=c d" }, "?model=a%26b%3Dc%20d"],
  ])("%o encodes as %s and decodes back", (change, query) => {
    const s = { ...defaults(fields), ...change };
    expect(encode(s, fields)).toBe(query);
    expect(decode(query, fields)).toEqual(s);
  });

  test("keys are written in the schema's order whatever the state's", () => {
    const s = { ...defaults(fields), rate_rps: "9", model: "x" };
    expect(encode(s, fields)).toBe("?model=x&rate_rps=9");
  });

  test("unknown keys are ignored; a typed-wrong number stays as typed", () => {
    expect(decode("?nope=1&rate_rps=abc", fields)).toEqual({ ...defaults(fields), rate_rps: "abc" });
  });

  test("booleans read 1, true and a bare key as true, anything else as false", () => {
    expect(decode("?prefix=1", fields).prefix).toBe(true);
    expect(decode("?prefix=true", fields).prefix).toBe(true);
    expect(decode("?prefix", fields).prefix).toBe(true);
    expect(decode("?prefix=0", fields).prefix).toBe(false);
    expect(decode("?prefix=no", fields).prefix).toBe(false);
  });

  test("lists drop empty items and trim spaces", () => {
    expect(decode("?gpus=b200,,%20h200%20", fields).gpus).toEqual(["b200", "h200"]);
  });

  test("defaults are copies: editing a decoded list leaves the schema alone", () => {
    const s = decode("", fields);
    (s.gpus as string[]).push("l4");
    expect(fields[1].def).toEqual(["h100-sxm", "h200"]);
  });
});

describe("num", () => {
  test.each([
    ["", undefined],
    ["  ", undefined],
    ["4", 4],
    [" 2.5 ", 2.5],
    ["1e3", 1000],
    ["-4", -4],
    ["abc", "abc"],
    ["4 req/s", "4 req/s"],
  ])("%j → %j", (text, want) => {
    expect(num(text)).toEqual(want);
  });
});

describe("prune", () => {
  test("drops undefined members and objects left empty, keeps zeros, false and arrays", () => {
    expect(prune({ a: undefined, b: { c: undefined }, d: 0, e: false, f: [], g: { h: 1 } })).toEqual({ d: 0, e: false, f: [], g: { h: 1 } });
  });
});
