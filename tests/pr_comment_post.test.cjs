// scripts/pr-comment.cjs against a stand-in for the GitHub client: the first run creates
// the comment, the next ones update that comment and no other. Run by .ci/run with
// `node --test`.
"use strict";

const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const test = require("node:test");

const { post, body, tag } = require("../scripts/pr-comment.cjs");

function fakeGithub(existing) {
  const calls = [];
  const listComments = async () => existing;
  return {
    calls,
    paginate: async (fn, args) => fn(args),
    rest: {
      issues: {
        listComments,
        updateComment: async (args) => calls.push(["update", args]),
        createComment: async (args) => calls.push(["create", args]),
      },
    },
  };
}

const context = { repo: { owner: "o", repo: "r" }, payload: { pull_request: { number: 7 } } };

function commentFile(text) {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "pr-comment-")), "c.md");
  fs.writeFileSync(file, text);
  return file;
}

test("creates the comment when none carries the marker", async () => {
  const github = fakeGithub([{ id: 1, body: "an unrelated comment" }]);
  const result = await post({ github, context, file: commentFile("### x\n"), marker: "m" });
  assert.equal(result, "created");
  assert.deepEqual(github.calls, [
    ["create", { owner: "o", repo: "r", issue_number: 7, body: "### x\n\n<!-- m -->\n" }],
  ]);
});

test("updates the comment that carries the marker", async () => {
  const github = fakeGithub([
    { id: 1, body: "<!-- other -->" },
    { id: 2, body: "old\n<!-- m -->" },
    { id: 3, body: null },
  ]);
  const result = await post({ github, context, file: commentFile("new\n<!-- m -->\n"), marker: "m" });
  assert.equal(result, "updated");
  assert.deepEqual(github.calls, [
    ["update", { owner: "o", repo: "r", comment_id: 2, body: "new\n<!-- m -->\n" }],
  ]);
});

test("refuses a marker that would end the HTML comment", () => {
  assert.throws(() => tag("a-->b"));
  assert.throws(() => tag(""));
  assert.equal(body("x", "m"), "x\n\n<!-- m -->\n");
});
