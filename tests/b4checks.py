"""Runs b4 review's check commands the way b4 0.16's review TUI does (b4/review_tui/_common.py,
_run_checks; _tracking_app.py, _do_checkout), with b4's own functions, on a series given as
an mbox, in the git repository that is the current directory. Used by test_review_channels.py.

    python b4checks.py SERIES.mbox [--checkout [--back]]

--checkout first makes the review branch b4/review/<change-id> as the TUI's checkout does
(b4 applies the series at its base-commit and adds its tracking commit); the checks then get
B4_TRACKING_FILE as the TUI gives it; --back then checks out main again. Prints {"perpatch": {msgid: [result...]},
"series": [result...]} as JSON.
"""
import argparse
import io
import json
import os
import sys
import tempfile

import b4
import b4.review
import b4.review.checks as checks


def main():
    b4.setup_config(argparse.Namespace(config=None))  # what b4's command line does first
    msgs = b4.mailsplit_bytes(open(sys.argv[1], "rb").read())
    topdir = b4.git_get_toplevel()
    extra_env = {}
    if "--checkout" in sys.argv:
        lser = b4.review._get_lore_series(msgs)
        am_msgs = lser.get_am_ready(noaddtrailers=True, addmysob=False, addlink=False, cherrypick=None,
                                    copyccs=False, allowbadchars=False, showchecks=False)
        ifh = io.BytesIO()
        b4.save_git_am_mbox(am_msgs, ifh)
        base = lser.base_commit
        top = next(m for m in lser.patches if m is not None).msgid
        linkmask = "https://lore.kernel.org/r/%s"
        b4.git_fetch_am_into_repo(topdir, ambytes=ifh.getvalue(), at_base=base, origin=linkmask % top,
                                  am_flags=["-3"])
        branch = f"b4/review/{lser.change_id}"
        b4.review.create_review_branch(topdir, branch, base, lser, linkmask % top, linkmask)
        _cover, tracking = b4.review.load_tracking(topdir, branch)
        fd, tracking_file = tempfile.mkstemp(prefix="b4-tracking-", suffix=".json")
        with os.fdopen(fd, "w") as fp:
            json.dump(tracking, fp, indent=2)
        extra_env["B4_TRACKING_FILE"] = tracking_file
        if "--back" in sys.argv:  # the maintainer goes back to their branch; the checks run there
            b4.git_run_command(topdir, ["checkout", "-q", "main"])
    cover, patches = None, []
    for msg in msgs:
        lsubj = b4.LoreSubject(msg.get("subject", ""))
        msgid = msg.get("message-id", "").strip("<> ")
        if lsubj.counter == 0 and lsubj.expected > 0:
            cover = (msgid, msg)
        elif lsubj.patch and not lsubj.reply:
            patches.append((msgid, msg))
    patches.sort(key=lambda p: b4.LoreSubject(p[1].get("subject", "")).counter)
    perpatch_cmds, series_cmds = checks.load_check_cmds()
    out = {"perpatch": checks.run_perpatch_checks(patches, perpatch_cmds, topdir, extra_env=extra_env),
           "series": checks.run_series_checks(cover or patches[0], series_cmds, topdir, extra_env=extra_env)
           if series_cmds else []}
    json.dump(out, sys.stdout, indent=2)


if __name__ == "__main__":
    main()
