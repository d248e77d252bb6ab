// Creates or updates the one pull-request comment that carries `<!-- marker -->`, for
// actions/github-script: .github/workflows/benchmarks.yml and action.yml call it, so that
// each pull request keeps one benchmark comment, updated on every push.
"use strict";

const fs = require("node:fs");

/** The HTML comment a pull request's benchmark comment is found by. */
function tag(marker) {
  if (!marker || /--|>|\n/.test(marker)) {
    throw new Error(`marker ${JSON.stringify(marker)}: one line without "--" or ">"`);
  }
  return `<!-- ${marker} -->`;
}

/** The comment's body: the file's text, with the marker's tag at its end if it lacks it. */
function body(text, marker) {
  const t = tag(marker);
  return text.includes(t) ? text : `${text.trimEnd()}\n\n${t}\n`;
}

/**
 * Posts `file` on the pull request of `context`: updates the first comment that carries
 * the marker, else creates one. Returns "updated" or "created".
 */
async function post({ github, context, file, marker }) {
  const text = body(fs.readFileSync(file, "utf8"), marker);
  const { owner, repo } = context.repo;
  const issue_number = context.payload.pull_request.number;
  const comments = await github.paginate(github.rest.issues.listComments, {
    owner,
    repo,
    issue_number,
    per_page: 100,
  });
  const mine = comments.find((c) => (c.body || "").includes(tag(marker)));
  if (mine) {
    await github.rest.issues.updateComment({ owner, repo, comment_id: mine.id, body: text });
    return "updated";
  }
  await github.rest.issues.createComment({ owner, repo, issue_number, body: text });
  return "created";
}

module.exports = { post, body, tag };
