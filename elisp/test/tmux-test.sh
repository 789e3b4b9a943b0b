#!/usr/bin/env bash
# tmux-test.sh --- planbridge in a real terminal: emacs -nw under tmux.
#
# Usage: elisp/test/tmux-test.sh   (PLANBRIDGE_PROGRAM defaults to bin/planbridge)
#
# Starts `emacs -nw -Q' in a private tmux server (its own socket, so no
# other tmux session is touched), loads planbridge from the checkout,
# opens a session on a temporary git repository with the scripted
# engine, toggles Plan, sends a prompt that the script answers with a
# proposal, and asserts on `tmux capture-pane': the [Plan · ask]
# indicator, the card's rows, then acceptance and the edited file.
# Prints "tmux-test: ok" last on success.  The tmux server and the
# temporary directory are always removed.

set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
elisp=$(dirname "$here")
root=$(dirname "$elisp")
program=${PLANBRIDGE_PROGRAM:-$root/bin/planbridge}
emacs=${EMACS:-emacs}

if [[ ! -x $program ]]; then
  echo "tmux-test: no backend at $program (run make build)" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/planbridge-tmux-XXXXXX")
sock=$tmp/tmux.sock
name=planbridge-test
tm() { tmux -S "$sock" -f "$tmp/tmux.conf" "$@"; }
cleanup() {
  tm kill-server >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

screen() { tm capture-pane -p -t "$name"; }

fail() {
  echo "tmux-test: FAIL: $*" >&2
  echo "---- screen ----" >&2
  screen >&2 || true
  echo "----------------" >&2
  exit 1
}

# wait_for REGEX [SECONDS]: wait until the screen matches REGEX (grep -E).
wait_for() {
  local regex=$1 deadline=$((SECONDS + ${2:-20}))
  while ((SECONDS < deadline)); do
    if screen | grep -Eq -- "$regex"; then
      return 0
    fi
    sleep 0.2
  done
  fail "timed out waiting for /$regex/"
}

# A workspace and the model's script: a proposal, then an
# implementation turn that starts the plan's step and edits hello.txt,
# then a Goal that completes at once.
repo=$tmp/repo
mkdir -p "$repo"
git -C "$repo" init -q
echo hello >"$repo/hello.txt"
git -C "$repo" add hello.txt
git -C "$repo" -c user.name=t -c user.email=t@example.invalid commit -q -m init

cat >"$tmp/script.json" <<'JSON'
[{"text": "Looked around.\n\n<proposed_plan>\n# Rename the greeting\n\n## Key Changes\n- Change hello to hi in hello.txt\n\n## Validation\n- cat hello.txt\n</proposed_plan>\n"},
 {"text": "Implementing.\n", "tool_calls": [{"name": "update_plan_step", "arguments": {"step": "s1", "status": "in_progress"}}, {"name": "edit_file", "arguments": {"path": "hello.txt", "old": "hello", "new": "hi"}}]},
 {"text": "Done: hello.txt says hi.\n"},
 {"tool_calls": [{"name": "update_goal", "arguments": {"status": "complete", "summary": "greeted"}}], "usage": {"input_tokens": 30, "output_tokens": 12}},
 {"text": "Goal met.\n", "usage": {"input_tokens": 5, "output_tokens": 3}}]
JSON

cat >"$tmp/init.el" <<EOF
(setq planbridge-program "$program"
      planbridge-state-dir "$tmp/state"
      planbridge-engine '(script :file "$tmp/script.json")
      planbridge-permission-function #'ignore)
;; tmux (extended-keys always) sends C-<tab> as CSI 9;5u.
(define-key input-decode-map "\e[9;5u" [C-tab])
EOF
echo 'set -s extended-keys always' >"$tmp/tmux.conf"

tm new-session -d -s "$name" -x 120 -y 40 -c "$repo" \
  "TERM=xterm-256color $emacs -nw -Q -L '$elisp' -l planbridge -l '$tmp/init.el'"

wait_for '\*scratch\*'

# M-x planbridge opens the session of the project.
tm send-keys -t "$name" M-x
tm send-keys -t "$name" -l planbridge
tm send-keys -t "$name" Enter
wait_for '^\[ask\]'
wait_for '\*planbridge: repo\*'
# The session alone in the frame, so that the card fits below it.
tm send-keys -t "$name" C-x 1
wait_for '^\[ask\]'

# Toggle Plan with C-<tab>.  tmux sends it as CSI 9;5u (extended-keys
# always, set above), which init.el decodes as a CSI-u terminal user
# would; should that not reach Emacs, C-c C-t (the terminal binding)
# must toggle Plan instead.
tm send-keys -t "$name" C-Tab 2>/dev/null || true
sleep 1
if screen | grep -q '^\[Plan · ask\]'; then
  echo "tmux-test: C-<tab> toggled Plan"
else
  echo "tmux-test: C-<tab> did not reach Emacs as C-<tab>; using C-c C-t"
  screen | grep -q '^\[ask\]' || fail "C-<tab> changed the posture in an unexpected way"
  tm send-keys -t "$name" C-c C-t
fi
wait_for '^\[Plan · ask\]'
screen | grep -Eq '^> *$' || fail "the composer is not empty after toggling Plan"
# C-c C-t toggles in a terminal too: off and on again.
tm send-keys -t "$name" C-c C-t
wait_for '^\[ask\]'
tm send-keys -t "$name" C-c C-t
wait_for '^\[Plan · ask\]'

tm send-keys -t "$name" -l 'rename the greeting'
tm send-keys -t "$name" Enter

# The card: the plan above one row per setting, and the footer.
wait_for 'Plan proposal: Rename the greeting'
for row in 'Location +Here' 'Context +Current' 'Execution +Direct' \
  'Budget +Goal execution only' 'Mode +ask' 'Model +default' \
  'Skills +none' 'Instructions +none' 'RET accept +f feedback'; do
  wait_for "$row" 5
done
screen | grep -q '^\[Plan · ask\]' || fail "the Plan indicator is gone"
# The session window above keeps its transcript and composer.
screen | grep -q '^▶ rename the greeting' || fail "the transcript is gone"
screen | grep -q '^┌─ Plan proposal: Rename the greeting' || fail "the proposal is not in the transcript"
screen | grep -Eq '^> *$' || fail "the composer is gone"
# No card row wraps: each is cut to the window width.
if screen | grep -Eq '^ (l|c|e|m|M|s|i) +[A-Z][a-z]+ .*\\$'; then
  fail "a card row wrapped"
fi

# The card is selected: q hides it, the header counts it, C-c C-a in
# the session brings it back.
tm send-keys -t "$name" q
wait_for '^\[Plan · ask\] 1 plan'
screen | grep -q 'Location +Here' && fail "the card is still shown after q"
tm send-keys -t "$name" C-c C-a
wait_for 'Location +Here'
screen | grep -q '^\[Plan · ask\] 1 plan' && fail "the counter is still shown"

# m sets the implementation's mode, RET accepts.
tm send-keys -t "$name" m
wait_for 'Mode +edits'
tm send-keys -t "$name" Enter
wait_for 'Implement accepted plan'
wait_for 'Implementation handoff done'
[[ $(cat "$repo/hello.txt") == hi ]] || fail "hello.txt was not edited: $(cat "$repo/hello.txt")"
screen | grep -q 'Location +Here' && fail "the card is still shown after acceptance"
screen | grep -q '^\[ask\]' || fail "the header does not show [ask] after acceptance"

# The plan's step in progress, in the gerund, above the prompt; the
# header counts the steps.
wait_for '^  \[>\] Changing hello to hi in hello\.txt$'
wait_for '^Plan: Rename the greeting — 0/1 steps$'
wait_for '^\[ask\] 0/1 steps'

# M-x planbridge-goal starts a Goal; the header shows its status,
# token use and turns.
tm send-keys -t "$name" M-x
tm send-keys -t "$name" -l planbridge-goal
tm send-keys -t "$name" Enter
wait_for 'Goal objective:'
tm send-keys -t "$name" -l 'Greet the world'
tm send-keys -t "$name" Enter
wait_for 'Goal met\.'
wait_for '^\[ask\] Goal complete · 50 tokens \(no budget\) · 1 turn 0/1 steps'

echo "tmux-test: ok"
