// Package command reads what a person types into the composer, the same
// way for every surface (Emacs, a share link): whether the text is one of
// the session's commands or a prompt for the model ([Parse]), what the
// argument of `/plan` asks for ([ParsePlan]), the title a session's
// first prompt gives it ([Title]), and the reply to `/plan status`
// ([PlanStatus], written by [Status] from what the session, the tracked
// plan and the confinement say). It decides nothing and holds no state:
// the session carries a command out (the `/goal` argument is package
// goal's to read: its ParseCommand).
//
// Matching is on the exact first token: prose that merely mentions
// planning ("plan this", "/planning") is a prompt and never changes the
// posture. `/compact` and `/review` take no argument; with one they are
// prompts. A slash token that names no command is a prompt too.
package command
