package agent

// InterruptedCall is the tool result the model sees for a call whose
// result was never recorded (the process stopped while it ran).
const InterruptedCall = "error: interrupted: planbridge stopped before this call returned; its effects are unknown, check before repeating it"

// CompleteToolCalls returns a copy of msgs in which every assistant tool
// call has a tool result, right after its message: a call left without
// one (a crash while it ran) gets [InterruptedCall], so a stored
// conversation stays well-formed for every engine. msgs is not changed.
func CompleteToolCalls(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		out = append(out, m)
		if m.Role != RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		have := map[string]bool{}
		for i+1 < len(msgs) && msgs[i+1].Role == RoleTool {
			i++
			have[msgs[i].ToolCallID] = true
			out = append(out, msgs[i])
		}
		for _, c := range m.ToolCalls {
			if !have[c.ID] {
				out = append(out, Message{Role: RoleTool, ToolCallID: c.ID, Name: c.Name, Content: InterruptedCall})
			}
		}
	}
	return out
}

// ContextSize is the size, in bytes, of a request made of msgs and then
// next: every message's content and tool-call arguments. It is what a
// context window is measured against (see handoff.ModelConfig.NearWindow).
func ContextSize(msgs []Message, next string) int {
	n := len(next)
	for _, m := range msgs {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Arguments)
		}
	}
	return n
}
