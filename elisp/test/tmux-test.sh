#!/usr/bin/env bash
# tmux-test.sh --- planbridge in a real terminal: emacs -nw under tmux.
#
# Usage: elisp/test/tmux-test.sh   (PLANBRIDGE_PROGRAM defaults to bin/planbridge)
#
# Starts `emacs -nw -Q' in a private tmux server (its own socket, so no
# other tmux session is touched), loads planbridge from the checkout,
# opens a session on a temporary git repository with the scripted
# engine, and asserts on `tmux capture-pane':
#  - Plan toggles; a proposal arriving while the person types in another
#    buffer leaves the focus, that buffer and the card's settings alone;
#  - C-g on the card asks, and the cancelled plan comes back (C-c C-r);
#  - the accepted implementation is killed mid-stream with the backend
#    (SIGKILL by pid), and after recovering the retried turn appears in
#    the same buffer;
#  - the header shows a Goal's percentage with its % sign;
#  - in a second Emacs, the greeter walkthrough of testdata/ runs twice
#    in a row (each session replays the script from its start).
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
# The default is generous: a machine busy with other builds can be slow
# to show what surely comes.
wait_for() {
  local regex=$1 deadline=$((SECONDS + ${2:-60}))
  while ((SECONDS < deadline)); do
    if screen | grep -Eq -- "$regex"; then
      return 0
    fi
    sleep 0.2
  done
  fail "timed out waiting for /$regex/"
}

# wait_gone REGEX [SECONDS]: wait until the screen no longer matches REGEX.
wait_gone() {
  local regex=$1 deadline=$((SECONDS + ${2:-60}))
  while ((SECONDS < deadline)); do
    if ! screen | grep -Eq -- "$regex"; then
      return 0
    fi
    sleep 0.2
  done
  fail "timed out waiting for /$regex/ to go"
}

# A workspace and the model's script: a slow proposal, a slow
# implementation turn (killed with the backend), the retried turn that
# edits hello.txt, then a Goal that stops blocked.
repo=$tmp/repo
mkdir -p "$repo"
git -C "$repo" init -q
echo hello >"$repo/hello.txt"
git -C "$repo" add hello.txt
git -C "$repo" -c user.name=t -c user.email=t@example.invalid commit -q -m init

cat >"$tmp/script.json" <<'JSON'
[{"text": "Looking around the repository before proposing anything at all, slowly.\n\n<proposed_plan>\n# Rename the greeting\n\n## Key Changes\n- Change hello to hi in hello.txt\n\n## Validation\n- cat hello.txt\n</proposed_plan>\n", "delay_ms": 60},
 {"text": "Implementing slowly, one careful chunk after another, until the backend dies under me...\n", "delay_ms": 250},
 {"text": "Recovered: implementing again.\n", "tool_calls": [{"name": "update_plan_step", "arguments": {"step": "s1", "status": "in_progress"}}, {"name": "edit_file", "arguments": {"path": "hello.txt", "old": "hello", "new": "hi"}}]},
 {"text": "Done: hello.txt says hi.\n"},
 {"tool_calls": [{"name": "update_goal", "arguments": {"status": "blocked", "summary": "needs a human"}}], "usage": {"input_tokens": 30, "output_tokens": 12}},
 {"text": "Blocked.\n", "usage": {"input_tokens": 5, "output_tokens": 3}}]
JSON

cat >"$tmp/init.el" <<INIT
(setq planbridge-program "$program"
      planbridge-state-dir "$tmp/state"
      planbridge-engine '(script :file "$tmp/script.json")
      planbridge-permission-function #'ignore)
;; tmux (extended-keys always) sends C-<tab> as CSI 9;5u.
(define-key input-decode-map "\e[9;5u" [C-tab])
;; The test kills the backend by its pid.
(advice-add 'planbridge--start :filter-return
            (lambda (conn)
              (with-temp-file "$tmp/backend.pid"
                (insert (number-to-string (process-id (planbridge--conn-process conn)))))
              conn))
INIT
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
# The toggle is answered by the backend: on a loaded machine that takes
# a while, and a C-c C-t sent while C-<tab>'s answer is on its way would
# toggle Plan back.
tm send-keys -t "$name" C-Tab 2>/dev/null || true
toggled=
for _ in $(seq 50); do
  if screen | grep -q '^\[Plan · ask\]'; then toggled=yes; break; fi
  sleep 0.2
done
if [[ $toggled ]]; then
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

# A code buffer on the right; the prompt is sent from the session on
# the left, then the person types in the code buffer while the slow
# proposal streams and arrives.
tm send-keys -t "$name" C-x 3
tm send-keys -t "$name" C-x o
tm send-keys -t "$name" C-x b
tm send-keys -t "$name" -l code
tm send-keys -t "$name" Enter
tm send-keys -t "$name" C-x o
tm send-keys -t "$name" -l 'rename the greeting'
tm send-keys -t "$name" Enter
wait_for 'Looking around'
tm send-keys -t "$name" C-x o
for word in lmce xyz; do
  tm send-keys -t "$name" -l "$word"
  sleep 0.5
done
wait_for 'Plan proposal: Rename the greeting'
wait_for 'Plan proposed — C-c C-a to review'
# Keys after the card arrived still go to the code buffer.
tm send-keys -t "$name" -l 'lm'
tm send-keys -t "$name" Enter
tm send-keys -t "$name" -l 'END'
wait_for 'lmcexyzlm'
wait_for 'END'
screen | grep -Eq 'Mode +ask' || fail "the card's Mode changed"
screen | grep -Eq 'Location +Here' || fail "the card's Location changed"
screen | grep -Eq 'Context +Current' || fail "the card's Context changed"
screen | grep -q 'Implementation handoff' && fail "the plan was accepted by keys meant for the code buffer"

# Back to the session alone; C-c C-a brings the card and selects it.
tm send-keys -t "$name" M-x
tm send-keys -t "$name" -l planbridge
tm send-keys -t "$name" Enter
tm send-keys -t "$name" C-x 1
wait_for '^\[Plan · ask\] 1 plan'
tm send-keys -t "$name" C-c C-a
wait_for 'Location +Here'
for row in 'Location +Here' 'Context +Current' 'Execution +Direct' \
  'Budget +Goal execution only' 'Mode +ask' 'Model +default' \
  'Skills +none' 'Instructions +none' 'RET accept +f feedback'; do
  wait_for "$row"
done
# The session window above keeps its transcript and composer.
screen | grep -q '^─ turn 1 done' || fail "the transcript is gone"
screen | grep -q '^│ - Change hello to hi in hello.txt' || fail "the proposal is not in the transcript"
screen | grep -Eq '^> *$' || fail "the composer is gone"
if screen | grep -Eq '^ (l|c|e|m|M|s|i) +[A-Z][a-z]+ .*\\$'; then
  fail "a card row wrapped"
fi

# q hides it, the header counts it, C-c C-a in the session brings it back.
tm send-keys -t "$name" q
wait_for '^\[Plan · ask\] 1 plan'
screen | grep -Eq 'Location +Here' && fail "the card is still shown after q"
tm send-keys -t "$name" C-c C-a
wait_for 'Location +Here'
screen | grep -q '^\[Plan · ask\] 1 plan' && fail "the counter is still shown"

# C-g asks; n keeps the plan, y makes it a draft that C-c C-r brings back.
tm send-keys -t "$name" C-g
wait_for 'Cancel this plan\?'
tm send-keys -t "$name" n
wait_for 'still waiting for approval'
screen | grep -Eq 'Location +Here' || fail "the card went away after n"
tm send-keys -t "$name" C-g
wait_for 'Cancel this plan\?'
tm send-keys -t "$name" y
wait_for 'Plan cancelled: the proposal is a draft now \(C-c C-r brings it back\)'
screen | grep -Eq 'Location +Here' && fail "the card is still shown after cancelling"
tm send-keys -t "$name" C-c C-r
wait_for 'Location +Here'
wait_for 'waiting for approval again'

# m sets the implementation's mode, RET accepts.
tm send-keys -t "$name" m
wait_for 'Mode +edits'
tm send-keys -t "$name" Enter
wait_for 'The implementation runs with mode edits'
wait_for 'Implementing slowly'
# Kill the backend mid-implementation, by its pid.
old_pid=$(cat "$tmp/backend.pid")
kill -KILL "$old_pid"
wait_for 'The backend exited'
tm send-keys -t "$name" M-x
tm send-keys -t "$name" -l planbridge-recover
tm send-keys -t "$name" Enter
wait_for 'Recovered: implementing again'
[[ $(cat "$tmp/backend.pid") != "$old_pid" ]] || fail "the backend was not restarted"
wait_for 'Done: hello.txt says hi'
[[ $(cat "$repo/hello.txt") == hi ]] || fail "hello.txt was not edited: $(cat "$repo/hello.txt")"
screen | grep -q 'planbridge: repo · rename the greeting' || fail "the session buffer is not the one shown"
screen | grep -Eq 'Location +Here' && fail "the card is still shown after acceptance"

# M-x planbridge-goal starts a Goal, which stops blocked; a budget
# makes the header show its percentage, % included.
tm send-keys -t "$name" M-x
tm send-keys -t "$name" -l planbridge-goal
tm send-keys -t "$name" Enter
wait_for 'Goal objective:'
tm send-keys -t "$name" -l 'Greet the world'
tm send-keys -t "$name" Enter
wait_for 'Goal blocked'
wait_for '^\[ask\] Goal blocked · 50 tokens \(no budget\) · 1 turn'
tm send-keys -t "$name" M-x
tm send-keys -t "$name" -l planbridge-goal-budget
tm send-keys -t "$name" Enter
wait_for 'Goal budget in tokens'
tm send-keys -t "$name" -l 1000
tm send-keys -t "$name" Enter
wait_for '^\[ask\] Goal blocked · 50/1,000 tokens \(5%\) · 1 turn'
tm kill-session -t "$name"

# The greeter walkthrough of testdata/, twice in a row in one Emacs:
# each new session (C-u M-x planbridge) replays the script from its start.
greeter=$tmp/greeter
mkdir -p "$greeter"
printf 'module greeter\n\ngo 1.22\n' >"$greeter/go.mod"
printf 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println("Hello, world!")\n}\n' >"$greeter/main.go"
git -C "$greeter" init -q
git -C "$greeter" add -A
git -C "$greeter" -c user.name=t -c user.email=t@example.invalid commit -q -m init
cat >"$tmp/greeter.el" <<INIT
(setq planbridge-program "$program"
      planbridge-state-dir "$tmp/state-greeter"
      planbridge-engine '(script :file "$root/testdata/scripts/greeter.json")
      planbridge-permission-function #'ignore)
INIT
# A 110x32 terminal: the greeter's long plan does not fit the card's
# window, and its settings and footer must still be on screen.
tm new-session -d -s "$name" -x 110 -y 32 -c "$greeter" \
  "TERM=xterm-256color $emacs -nw -Q -L '$elisp' -l planbridge -l '$tmp/greeter.el'"
wait_for '\*scratch\*'
for round in 1 2; do
  if ((round == 2)); then
    tm send-keys -t "$name" C-u
  fi
  tm send-keys -t "$name" M-x
  tm send-keys -t "$name" -l planbridge
  tm send-keys -t "$name" Enter
  if ((round == 2)); then
    # Round 1's buffer shows the same header: wait until the new
    # session's buffer replaced it, or the prompt is typed into the old
    # one (or into nothing) while the new session is still being created.
    wait_gone 'Done: `--name` is parsed'
  fi
  wait_for '^\[ask\]'
  tm send-keys -t "$name" C-x 1
  tm send-keys -t "$name" -l '/plan make the greeting configurable'
  tm send-keys -t "$name" Enter
  wait_for 'Plan proposed — C-c C-a to review'
  # The card is displayed, not selected; C-c C-a selects it (the
  # answer of approval/get comes first).
  tm send-keys -t "$name" C-c C-a
  wait_for 'Context +Current'
  for row in 'Location +Here' 'Instructions +none' 'RET accept +f feedback'; do
    wait_for "$row"
  done
  sleep 1
  tm send-keys -t "$name" c
  wait_for 'Context +Fresh'
  tm send-keys -t "$name" c
  wait_for 'Context +Summary'
  tm send-keys -t "$name" m
  wait_for 'Mode +edits'
  tm send-keys -t "$name" Enter
  wait_for 'Done: `--name` is parsed'
  screen | grep -q 'script exhausted' && fail "round $round: the script was exhausted"
  grep -q 'flag.String' "$greeter/main.go" || fail "round $round: main.go was not edited"
  git -C "$greeter" checkout -q -- main.go
  echo "tmux-test: greeter walkthrough $round done"
done

echo "tmux-test: ok"
