"""`/triage` commands in PR comments, taken by the server's worker against the
fake GitHub: each command allowed, refused and malformed; redelivered and
edited; inside a code block; the reactions and replies as GitHub shapes them.

The payloads are the octokit ``issue_comment`` / ``created`` example
(tests/fixtures/github/webhooks) with its repository, number, comment and
author set, and ``issue.pull_request`` added (the example is a plain issue).
"""

from __future__ import annotations

import copy
import json
from functools import partial

import pytest
from sqlalchemy import select

from tests.conftest import EXAMPLE_RUNS
from tests.support.serving import fixture_bytes
from triage.kb import models as m
from triage.kb import store
from triage.serve import webhook, worker
from triage.serve.auth import from_settings
from triage.serve.queue import Queue
from triage.settings import Settings
from triage.usecases.post import post_report

REPO, PR, RUN = "sgl-project/sglang", 30433, "28903343346"
POINT = "v0.5.14-rocm720-mi35x-20260626"
MARKER = "<!-- triage:investigation=kimik26-disagg -->"


def payload(body: str, *, login: str = "alice", cid: int = 492700400, action: str = "created",
            user_type: str = "User") -> dict:
    data = copy.deepcopy(json.loads(fixture_bytes("issue_comment.created.json")))
    data["action"] = action
    data["repository"]["full_name"] = REPO
    data["issue"]["number"] = PR
    data["issue"]["pull_request"] = {"url": f"https://api.github.com/repos/{REPO}/pulls/{PR}",
                                     "html_url": f"https://github.com/{REPO}/pull/{PR}"}
    data["comment"].update(id=cid, body=body, html_url=f"https://github.com/{REPO}/pull/{PR}#issuecomment-{cid}")
    data["comment"]["user"].update(login=login, type=user_type)
    return data


class Bot:
    """The worker of `triage serve` on the bundled investigation, fed comments."""

    def __init__(self, fake, url: str) -> None:
        self.fake, self.url, self.queue = fake, url, Queue(url)
        self.processor = worker.Processor(url, self.queue, from_settings(Settings.from_env()), partial(post_report, url))
        self.sent = 0

    def say(self, body: str, *, login: str = "alice", cid: int | None = None, delivery: str | None = None,
            user_type: str = "User", **kw) -> tuple[str, str]:
        """Deliver a comment as the webhook would (its ``wanted`` decides); the state and outcome."""
        self.sent += 1
        cid = cid if cid is not None else 492700400 + self.sent
        data = payload(body, login=login, cid=cid, user_type=user_type, **kw)
        if not webhook.wanted("issue_comment", data):
            return "not stored", ""
        delivery = delivery or f"d-{self.sent}"
        if self.queue.put(delivery, "issue_comment", data["action"], data, None) == "duplicate":
            return "duplicate", ""
        if not any(c["id"] == cid for c in self.fake.comments(REPO, PR)):
            self.fake.add_comment(REPO, PR, body, login=login, user_type=user_type, cid=cid)
        state = self.processor.handle(self.queue.claim())
        (row,) = [d for d in self.queue.listing() if d.id == delivery]
        return state, row.outcome

    def commands(self) -> list[tuple]:
        with store.session(self.url) as s:
            return [(c.author, c.line, c.outcome, c.url) for c in store.commands_of(s, "kimik26-disagg")]

    def replies(self) -> list[str]:
        return [c["body"] for c in self.fake.comments(REPO, PR) if c["user"]["login"] == "triage-bot"
                and MARKER not in c["body"] and c["id"] < 9000]

    def sticky(self) -> list[dict]:
        return [c for c in self.fake.comments(REPO, PR) if MARKER in c["body"]]


@pytest.fixture
def bot(cli, fake_github, rules_dir):
    assert cli("import", str(EXAMPLE_RUNS)).code == 0
    fake_github.permissions.update(alice="write", mallory="read", ghost=None, boss="admin", keeper="maintain")
    return Bot(fake_github, store.resolve_url(None))


def excluded(url: str) -> dict:
    with store.session(url) as s:
        return {(r.run_id, r.config): r.excluded_reason for r in store.runs_of(s, "kimik26-disagg") if r.excluded}


def reactions(fake, cid: int) -> list[str]:
    return fake.reactions(cid)


def test_exclude_and_include_act_record_react_and_update_the_comment(bot, fake_github, cli):
    before = excluded(bot.url)
    state, outcome = bot.say(f"Looks wrong.\n/triage exclude {RUN} because based on plain main, not #30386",
                             cid=9001)
    assert state == "done", outcome
    assert set(excluded(bot.url)) - set(before) and all(
        reason == "based on plain main, not #30386" for (run, _), reason in excluded(bot.url).items() if run == RUN)
    assert reactions(fake_github, 9001) == ["eyes", "+1"]
    sent = fake_github.calls("POST", f"/repos/{REPO}/issues/comments/9001/reactions")
    assert [c.json for c in sent] == [{"content": "eyes"}, {"content": "+1"}]  # GitHub's request body
    (sticky,) = bot.sticky()
    assert bot.replies() == []
    assert bot.commands() == [("alice", f"/triage exclude {RUN} because based on plain main, not #30386", "done",
                               f"https://github.com/{REPO}/pull/{PR}#issuecomment-9001")]
    assert bot.say(f"/triage include {RUN}", login="keeper", cid=9002)[0] == "done"
    assert {run for run, _ in excluded(bot.url)} == {run for run, _ in before}
    assert reactions(fake_github, 9002) == ["eyes", "+1"] and len(bot.sticky()) == 1
    r = cli("history", "--pr", str(PR))
    assert r.code == 0, r.err
    assert "commands from comments:" in r.out and f"alice: /triage exclude {RUN}" in r.out
    assert f"keeper: /triage include {RUN} → done" in r.out and "#issuecomment-9002" in r.out
    j = json.loads(cli("history", "--pr", str(PR), "--format", "json").out)
    assert [c["outcome"] for c in j["commands"]] == ["done", "done"] and j["commands"][0]["author"] == "alice"


def test_mark_and_evidence_are_the_cli_use_cases_with_the_author(bot, fake_github):
    state, outcome = bot.say(f"/triage mark image {POINT} bad because gsm8k 0.87 on a local run\n"
                             "/triage evidence runtime-args rules_out because flags identical in both legs",
                             login="boss", cid=9003)
    assert state == "done" and outcome.startswith("2 of 2 command(s) done, comment updated"), outcome
    with store.session(bot.url) as s:
        (mark,) = s.execute(select(m.BisectMark)).scalars().all()
        (ev,) = s.execute(select(m.ManualEvidence).where(m.ManualEvidence.source == "comment")).scalars().all()
    assert (mark.bisect_id, mark.point, mark.verdict, mark.author) == ("image", POINT, "bad", "boss")
    assert (ev.hypothesis_id, ev.verdict, ev.author, ev.reason) == ("runtime-args", "rules_out", "boss",
                                                                    "flags identical in both legs")
    assert reactions(fake_github, 9003) == ["eyes", "+1"] and len(bot.sticky()) == 1


@pytest.mark.parametrize("login, said", [("mallory", "`mallory` has read"), ("ghost", "`ghost` has none")])
def test_without_write_access_nothing_is_done_and_one_reply_says_why(bot, fake_github, login, said):
    before = excluded(bot.url)
    state, outcome = bot.say(f"/triage exclude {RUN} because mine\n/triage refresh", login=login, cid=9004)
    assert state == "done" and outcome.startswith("refused: 0 of 2"), outcome
    assert excluded(bot.url) == before and bot.sticky() == []
    (reply,) = bot.replies()
    assert reply == f"`/triage` commands need write access to sgl-project/sglang: {said}, so nothing was done."
    (posted,) = [c for c in fake_github.calls("POST", f"/repos/{REPO}/issues/{PR}/comments") if c.json["body"] == reply]
    assert set(posted.json) == {"body"}  # the reply, as GitHub's create-comment takes it
    assert reactions(fake_github, 9004) == ["eyes", "confused"]
    assert [c[2] for c in bot.commands()] == ["refused", "refused"]
    assert fake_github.calls("GET", f"/repos/{REPO}/collaborators/{login}/permission")


def test_a_malformed_line_is_quoted_and_nothing_of_the_comment_is_done(bot, fake_github):
    before = excluded(bot.url)
    state, _ = bot.say(f"/triage include {RUN}\n/triage exclude {RUN}\n/triage refresh", cid=9005)
    assert state == "done" and excluded(bot.url) == before and bot.sticky() == []
    (reply,) = bot.replies()
    assert reply.startswith(f"Could not read `/triage exclude {RUN}`: needs a reason: /triage exclude RUN because …")
    assert reply.endswith("Nothing in this comment was done; `/triage help` lists the commands.")
    assert reactions(fake_github, 9005) == ["eyes", "confused"]
    assert [c[2] for c in bot.commands()] == ["skipped", "malformed", "skipped"]


def test_a_command_that_fails_undoes_the_comments_other_commands(bot, fake_github):
    state, _ = bot.say(f"/triage mark image {POINT} bad because local run\n/triage exclude 999 because typo",
                       cid=9006)
    assert state == "done"
    with store.session(bot.url) as s:
        assert s.execute(select(m.BisectMark)).all() == []  # the mark before it is not kept
    (reply,) = bot.replies()
    assert "`/triage exclude 999 because typo` failed: no run 999 in the knowledge base" in reply
    assert reactions(fake_github, 9006) == ["eyes", "confused"] and bot.sticky() == []
    assert [c[2] for c in bot.commands()] == ["skipped", "failed"]


def test_a_redelivery_or_a_second_hook_changes_nothing_and_edits_are_not_read(bot, fake_github):
    body = f"/triage exclude {RUN} because not this PR's code"
    assert bot.say(body, cid=9007, delivery="same")[0] == "done"
    requests = len(fake_github.requests)
    assert bot.say(body, cid=9007, delivery="same") == ("duplicate", "")  # GitHub's redelivery: the same id
    state, outcome = bot.say(body, cid=9007, delivery="other-hook")  # the same comment by another delivery
    assert (state, outcome) == ("done", "comment 9007: taken already, nothing done")
    assert bot.say(f"/triage include {RUN}", cid=9007, action="edited") == ("not stored", "")
    assert len(fake_github.requests) == requests and len(bot.commands()) == 1


def test_commands_in_code_blocks_and_quotes_are_not_taken(bot, fake_github):
    body = f"To exclude it, say:\n```\n/triage exclude {RUN} because x\n```\n> /triage refresh\n    /triage help"
    state, outcome = bot.say(body, cid=9008)
    assert (state, outcome) == ("done", "no /triage command in the comment")
    assert fake_github.requests == [] and bot.commands() == []


def test_help_replies_with_the_commands_and_a_bots_comment_is_ignored(bot, fake_github):
    assert bot.say("/triage help", cid=9009)[0] == "done"
    (reply,) = bot.replies()
    assert "/triage mark BISECT POINT good|bad because …" in reply and "write access" in reply
    assert reactions(fake_github, 9009) == ["eyes", "+1"] and bot.sticky() == []
    state, outcome = bot.say("/triage refresh", login="triage-bot", user_type="Bot", cid=9010)
    assert outcome == "a comment by a bot: ignored" and reactions(fake_github, 9010) == []


def test_at_most_ten_commands_a_comment(bot, fake_github):
    bot.say("\n".join(["/triage refresh"] * 12), cid=9011)
    (reply,) = bot.replies()
    assert "Only the first 10 commands of a comment are read; 2 more were not." in reply
    assert reactions(fake_github, 9011) == ["eyes", "confused"] and len(bot.sticky()) == 1
    assert [c[2] for c in bot.commands()] == ["done"] * 10 + ["dropped"]


def test_run_is_refused_where_autopilot_is_not_enabled(bot, fake_github):
    fake_github.add_pull(REPO, PR)
    bot.say("/triage run", cid=9012)
    (reply,) = bot.replies()
    assert reply.startswith("`/triage run` started nothing: autopilot is not enabled for kimik26-disagg")
    assert fake_github.dispatches == [] and reactions(fake_github, 9012) == ["eyes", "confused"]


def test_run_dispatches_within_the_autopilot_budget(cli, fake_github, rules_dir, tmp_path):
    from tests.support.replay import Oracle, autopilot_rules, import_start

    autopilot_rules(rules_dir)
    import_start(cli, tmp_path)
    fake_github.on_dispatch = Oracle(fake_github)
    fake_github.permissions["alice"] = "write"
    bot = Bot(fake_github, store.resolve_url(None))
    state, outcome = bot.say("/triage run no-such-recipe", cid=9013)
    assert "nothing to start: no suggestion named (no-such-recipe) can be dispatched" in bot.replies()[0]
    assert fake_github.dispatches == []
    state, outcome = bot.say("/triage run", cid=9014)
    assert state == "done" and outcome.startswith("1 of 1 command(s) done, comment updated"), outcome
    assert len(fake_github.dispatches) == 1 and reactions(fake_github, 9014) == ["eyes", "+1"]
    with store.session(bot.url) as s:
        assert len(store.dispatches(s, "kimik26-disagg")) == 1
    bot.say("/triage run", cid=9015)  # one run in flight at a time
    assert len(fake_github.dispatches) == 1 and "waiting for" in bot.replies()[-1]


def test_the_server_takes_a_new_comment_and_ignores_an_edit(cli, fake_github, rules_dir, tmp_path):
    """Through `triage serve` itself: the signed `issue_comment` delivery is queued when it is
    `created` and holds `/triage`, and answered 202 "ignored" when it is an edit."""
    from tests.support.serving import Server, query

    assert cli("import", str(EXAMPLE_RUNS)).code == 0
    fake_github.permissions["alice"] = "write"
    fake_github.add_comment(REPO, PR, "/triage refresh", login="alice", cid=9100)
    srv = Server(tmp_path, fake_github).start()
    try:
        edited = srv.send(json.dumps(payload("/triage refresh", cid=9100, action="edited")).encode(), "issue_comment")
        assert edited.status_code == 202 and edited.json()["outcome"] == "ignored"
        chat = srv.send(json.dumps(payload("thanks!", cid=9101)).encode(), "issue_comment")
        assert chat.status_code == 202 and chat.json()["outcome"] == "ignored"
        new = srv.send(json.dumps(payload("/triage refresh", cid=9100)).encode(), "issue_comment", "c-1")
        assert new.status_code == 202 and new.json()["outcome"] == "queued"
        (row,) = srv.wait_settled(1)
        assert row[1] == "done" and row[3].startswith("1 of 1 command(s) done, comment updated, reacted"), row
    finally:
        srv.stop()
    assert fake_github.reactions(9100) == ["eyes", "+1"]
    assert len([c for c in fake_github.comments(REPO, PR) if MARKER in c["body"]]) == 1
    assert query(tmp_path, "select author, line, outcome from commentcommand") == [("alice", "/triage refresh", "done")]


def test_the_rule_file_may_widen_or_narrow_who_acts(cli, fake_github, rules_dir):
    path = rules_dir / "kimik26-disagg.yaml"
    text = path.read_text(encoding="utf-8")
    anchor = "  config_prefix: kimik26-fp8-1k1k-\n"
    assert anchor in text
    path.write_text(text.replace(anchor, anchor + "  commands: {allow: [mallory], deny: [Boss]}\n"), encoding="utf-8")
    assert cli("import", str(EXAMPLE_RUNS)).code == 0
    fake_github.permissions.update(mallory="read", boss="admin")
    bot = Bot(fake_github, store.resolve_url(None))
    assert bot.say("/triage refresh", login="mallory", cid=9201)[1].startswith("1 of 1 command(s) done")
    assert not fake_github.calls("GET", f"/repos/{REPO}/collaborators/mallory/permission")
    state, outcome = bot.say("/triage refresh", login="boss", cid=9202)
    assert outcome.startswith("refused"), outcome
    assert bot.replies() == ["`boss` may not give `/triage` commands here (the investigation's `commands: deny:`), "
                             "so nothing was done."]
    assert [c[2] for c in bot.commands()] == ["done", "refused"]


def test_a_login_in_commands_must_be_a_github_login(cli, rules_dir):
    path = rules_dir / "kimik26-disagg.yaml"
    anchor = "  config_prefix: kimik26-fp8-1k1k-\n"
    path.write_text(path.read_text(encoding="utf-8").replace(anchor, anchor + "  commands: {allow: ['@team x']}\n"),
                    encoding="utf-8")
    r = cli("import", str(EXAMPLE_RUNS))
    assert r.code == 2 and r.err.startswith("Error: rules/kimik26-disagg.yaml:") and len(r.err.splitlines()) == 1
    assert "'@team x' is not a GitHub login" in r.err, r.err
