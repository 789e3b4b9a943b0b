package anthropictest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

var (
	toolName  = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	toolUseID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
)

// Validate checks a Messages request body against the rules the real API
// enforces (and answers 400 for). It returns nil for a request the API
// accepts and an error naming the first broken rule otherwise.
func Validate(raw []byte) error {
	var b struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		Thinking  *struct {
			Type         string `json:"type"`
			BudgetTokens int    `json:"budget_tokens"`
		} `json:"thinking"`
		System []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"system"`
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return err
	}
	if b.Model == "" || b.MaxTokens < 1 {
		return fmt.Errorf("model and max_tokens are required")
	}
	if b.Thinking != nil && (b.Thinking.Type != "enabled" || b.Thinking.BudgetTokens < 1024 || b.Thinking.BudgetTokens >= b.MaxTokens) {
		return fmt.Errorf("thinking.budget_tokens must be ≥ 1024 and less than max_tokens")
	}
	if n := strings.Count(string(raw), `"cache_control"`); n > 4 {
		return fmt.Errorf("a maximum of 4 blocks with cache_control may be provided. Found %d", n)
	}
	for _, sb := range b.System {
		if sb.Type != "text" || sb.Text == "" {
			return fmt.Errorf("system: text content blocks must be non-empty")
		}
	}
	for _, t := range b.Tools {
		var sc struct {
			Type string `json:"type"`
		}
		if !toolName.MatchString(t.Name) || json.Unmarshal(t.InputSchema, &sc) != nil || sc.Type != "object" {
			return fmt.Errorf("tools: invalid tool %q", t.Name)
		}
	}
	if len(b.Messages) == 0 || b.Messages[0].Role != "user" {
		return fmt.Errorf("messages: first message must use the \"user\" role")
	}
	var uses []string // tool_use ids of the previous assistant message
	for i, m := range b.Messages {
		if i > 0 && m.Role == b.Messages[i-1].Role {
			return fmt.Errorf("messages.%d: roles must alternate", i)
		}
		if len(m.Content) == 0 {
			return fmt.Errorf("messages.%d: all messages must have non-empty content", i)
		}
		allowed := map[string]bool{"text": true, "tool_result": true}
		if m.Role == "assistant" {
			allowed = map[string]bool{"text": true, "thinking": true, "redacted_thinking": true, "tool_use": true}
		} else if m.Role != "user" {
			return fmt.Errorf("messages.%d: unknown role %q", i, m.Role)
		}
		var results []string
		seenText := false
		var nextUses []string
		for j, c := range m.Content {
			typ, _ := c["type"].(string)
			if !allowed[typ] {
				return fmt.Errorf("messages.%d.content.%d: %q not allowed for %s", i, j, typ, m.Role)
			}
			switch typ {
			case "text":
				if s, _ := c["text"].(string); s == "" {
					return fmt.Errorf("messages.%d.content.%d: text content blocks must be non-empty", i, j)
				}
				seenText = true
			case "thinking":
				if s, _ := c["signature"].(string); s == "" {
					return fmt.Errorf("messages.%d.content.%d: thinking blocks need their signature", i, j)
				}
				if c["cache_control"] != nil {
					return fmt.Errorf("messages.%d.content.%d: thinking blocks cannot be cached", i, j)
				}
			case "tool_use":
				u, _ := c["id"].(string)
				if !toolUseID.MatchString(u) {
					return fmt.Errorf("messages.%d.content.%d: tool_use id %q", i, j, u)
				}
				if _, ok := c["input"].(map[string]any); !ok {
					return fmt.Errorf("messages.%d.content.%d: input should be a valid dictionary", i, j)
				}
				nextUses = append(nextUses, u)
			case "tool_result":
				if seenText {
					return fmt.Errorf("messages.%d: tool_result blocks must come before text", i)
				}
				u, _ := c["tool_use_id"].(string)
				results = append(results, u)
			}
		}
		if m.Role == "user" {
			for _, u := range uses {
				if !slices.Contains(results, u) {
					return fmt.Errorf("messages.%d: tool_use ids were found without tool_result blocks immediately after: %s", i, u)
				}
			}
			for _, r := range results {
				if !slices.Contains(uses, r) {
					return fmt.Errorf("messages.%d: unexpected tool_use_id found in tool_result blocks: %s", i, r)
				}
			}
			uses = nil
		} else {
			uses = nextUses
		}
	}
	last := b.Messages[len(b.Messages)-1]
	if last.Role != "user" {
		return fmt.Errorf("the conversation must end with a user message")
	}
	if len(uses) > 0 {
		return fmt.Errorf("tool_use without tool_result")
	}
	if b.Thinking != nil && len(b.Messages) > 1 && last.Content[0]["type"] == "tool_result" {
		prev := b.Messages[len(b.Messages)-2].Content[0]["type"]
		if prev != "thinking" && prev != "redacted_thinking" {
			return fmt.Errorf("expected `thinking` or `redacted_thinking`, but found %v. When `thinking` is enabled, a final `assistant` message must start with a thinking block", prev)
		}
	}
	return nil
}
