package demo

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The demo reads tool results the way any MCP client would: from
// structuredContent, decoded into the few fields it uses.

type jobWire struct {
	JobID       string `json:"job_id"`
	Status      string `json:"status"`
	Kind        string `json:"kind"`
	Stage       string `json:"stage"`
	ReviewID    string `json:"review_id"`
	CreatedAt   string `json:"created_at"`
	CompletedAt string `json:"completed_at"`
	PollAfterMS int64  `json:"poll_after_ms"`
	Reused      bool   `json:"reused"`
	Error       *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type findingWire struct {
	FindingID  string         `json:"finding_id"`
	Severity   string         `json:"severity"`
	Kind       string         `json:"kind"`
	Title      string         `json:"title"`
	Route      string         `json:"route"`
	Viewports  []string       `json:"viewports"`
	ElementRef *string        `json:"element_ref"`
	Suggestion *string        `json:"suggestion"`
	Advisory   bool           `json:"advisory"`
	Facts      map[string]any `json:"facts"`
}

type reviewWire struct {
	ReviewID string        `json:"review_id"`
	Grade    string        `json:"grade"`
	Overall  string        `json:"overall"`
	Findings []findingWire `json:"findings"`
	Coverage struct {
		State string `json:"state"`
	} `json:"coverage"`
}

type outcomeWire struct {
	FindingID string         `json:"finding_id"`
	Outcome   string         `json:"outcome"`
	Reason    string         `json:"reason"`
	Facts     map[string]any `json:"facts"`
}

type budgetWire struct {
	UnitsReserved        int64 `json:"units_reserved"`
	TenantUnitsRemaining int64 `json:"tenant_units_remaining"`
}

// ToolError is a tool's error envelope.
type ToolError struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Retriable  bool   `json:"retriable"`
	NextAction string `json:"next_action"`
}

func (e *ToolError) Error() string { return e.Code + ": " + e.Message }

// summaryWire is the part of the summary view the walk prints.
type summaryWire struct {
	Grade    string         `json:"grade"`
	Findings int            `json:"findings"`
	ByKind   map[string]int `json:"by_kind"`
	Coverage struct {
		State string `json:"state"`
	} `json:"coverage"`
	Top []struct {
		Severity string `json:"severity"`
		Line     string `json:"line"`
	} `json:"top_findings"`
}

type payload struct {
	Job     jobWire      `json:"job"`
	Budget  *budgetWire  `json:"budget"`
	Summary *summaryWire `json:"summary"`
	Review  *reviewWire  `json:"review"`
	Recheck *struct {
		Outcomes []outcomeWire `json:"outcomes"`
	} `json:"recheck"`
	Presentation *struct {
		Panel          bool     `json:"panel"`
		Multimedia     bool     `json:"multimedia"`
		ImagesWithheld []string `json:"images_withheld"`
	} `json:"presentation"`
	Response *struct {
		Type      string `json:"type"`
		FindingID string `json:"finding_id"`
		Fix       string `json:"fix"`
	} `json:"response"`
	Error *ToolError `json:"error"`
}

// decode reads res's structuredContent into a payload and its raw JSON. A
// tool error comes back as a *ToolError.
func decode(res *mcp.CallToolResult) (*payload, []byte, error) {
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, nil, fmt.Errorf("demo: structuredContent: %w", err)
	}
	var p payload
	if res.StructuredContent != nil {
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, nil, fmt.Errorf("demo: structuredContent: %w", err)
		}
	}
	if res.IsError {
		if p.Error == nil {
			var text []string
			for _, c := range res.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					text = append(text, t.Text)
				}
			}
			return nil, raw, &ToolError{Code: "UNKNOWN", Message: strings.Join(text, " ")}
		}
		return nil, raw, p.Error
	}
	return &p, raw, nil
}
