package panel

import (
	"fmt"
	"html/template"
	"regexp"
	"strconv"
	"strings"
)

// fact is one measured fact as a reader sees it: a label, a value with its
// unit, a list when the fact is one (other elements with the same defect),
// and a swatch when the value is a colour.
type fact struct {
	Name   string
	Value  string
	List   []string
	Swatch template.CSS
}

// factLabels names every fact the checks write (TestEveryFactHasALabel
// holds it to their source), with its unit. It is the one table of labels:
// the file panel uses it here and the MCP App receives it in its page
// (AppHTML). A key missing from it is shown as its words.
var factLabels = map[string]struct{ label, unit string }{
	"also":             {"Also on", ""},
	"background":       {"Background", ""},
	"box_height":       {"Box height", "px"},
	"box_width":        {"Box width", "px"},
	"center_x":         {"Centre x", "px"},
	"center_y":         {"Centre y", "px"},
	"click_lands_on":   {"A click at the centre lands on", ""},
	"clipped_x_px":     {"Text cut off sideways", "px"},
	"clipped_y_px":     {"Text cut off below", "px"},
	"container":        {"Container", ""},
	"container_height": {"Container height", "px"},
	"container_width":  {"Container width", "px"},
	"count":            {"Elements", ""},
	"covered_by":       {"Covered by", ""},
	"declared":         {"Declared font", ""},
	"delta_e":          {"Colour difference (ΔE 2000)", ""},
	"edge":             {"Edge it escapes", ""},
	"element_right":    {"Element's right edge", "px"},
	"element_width":    {"Element width", "px"},
	"escape_px":        {"Runs out by", "px"},
	"font_size_px":     {"Font size", "px"},
	"foreground":       {"Text colour", ""},
	"gap_edge":         {"Side of the gap", ""},
	"gap_px":           {"Gap", "px"},
	"height_px":        {"Height", "px"},
	"higher_level":     {"Higher heading level", ""},
	"higher_level_px":  {"Higher heading's size", "px"},
	"level":            {"Heading level", ""},
	"minimum_px":       {"Minimum", "px"},
	"nearest_px":       {"Nearest step", "px"},
	"nearest_target":   {"Nearest target", ""},
	"nearest_token":    {"Nearest token", ""},
	"nearest_value":    {"Nearest token's value", ""},
	"natural_width":    {"Image's own width", "px"},
	"other":            {"Overlapped element", ""},
	"overflow_px":      {"Past the viewport by", "px"},
	"overlap_area_px2": {"Overlap area", "px²"},
	"overlap_h_px":     {"Overlap height", "px"},
	"overlap_w_px":     {"Overlap width", "px"},
	"property":         {"Property", ""},
	"ratio":            {"Contrast ratio", ":1"},
	"recommended_px":   {"Recommended", "px"},
	"rendered":         {"Rendered font", ""},
	"rendered_height":  {"Rendered height", "px"},
	"rendered_width":   {"Rendered width", "px"},
	"required":         {"Required ratio", ":1"},
	"role":             {"Role", ""},
	"siblings":         {"Siblings in the run", ""},
	"src":              {"Image source", ""},
	"suggested":        {"Suggested text colour", ""},
	"token_families":   {"Token font families", ""},
	"usual_gap_px":     {"Usual gap", "px"},
	"value":            {"Measured value", ""},
	"value_px":         {"Measured value", "px"},
	"viewport_width":   {"Viewport width", "px"},
	"width_px":         {"Width", "px"},
}

// newFact renders key = v for a reader.
func newFact(key string, v any) fact {
	label, unit := factLabels[key].label, factLabels[key].unit
	if label == "" {
		base := key
		if b, ok := strings.CutSuffix(key, "_px"); ok {
			base, unit = b, "px"
		}
		label = strings.ReplaceAll(base, "_", " ")
		label = strings.ToUpper(label[:1]) + label[1:]
	}
	f := fact{Name: label}
	switch x := v.(type) {
	case []string:
		f.List = x
	case []any:
		for _, e := range x {
			f.List = append(f.List, scalar(e))
		}
	default:
		f.Value = scalar(v)
		switch {
		case unit == ":1":
			f.Value += ":1"
		case unit != "":
			f.Value += " " + unit
		}
		f.Swatch = swatch(f.Value)
	}
	return f
}

func scalar(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		return strconv.Itoa(x)
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// hexColor is the only colour syntax a swatch accepts: the checks write
// colours as hex, and anything else from a page stays text.
var hexColor = regexp.MustCompile(`^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$`)

// swatch is the CSS background of a colour fact's swatch, or "". A value is
// used only once it is a plain hex colour, so no page-derived text reaches
// the style attribute.
func swatch(v string) template.CSS {
	if !hexColor.MatchString(v) {
		return ""
	}
	return template.CSS("background:" + v)
}

// sample is a contrast finding's text shown as measured and as the fix
// would have it: the same words in each colour on the measured background.
type sample struct {
	Label, Ratio string
	Style        template.CSS
}

// samples returns the before and after text samples of a contrast finding
// from its facts, or nil when the colours are not all plain hex.
func samples(facts map[string]any) []sample {
	fg, _ := facts["foreground"].(string)
	bg, _ := facts["background"].(string)
	if !hexColor.MatchString(fg) || !hexColor.MatchString(bg) {
		return nil
	}
	out := []sample{{Label: "measured", Ratio: ratio(facts["ratio"]), Style: template.CSS("color:" + fg + ";background:" + bg)}}
	if s, _ := facts["suggested"].(string); hexColor.MatchString(s) {
		out = append(out, sample{Label: "suggested", Ratio: "≥ " + ratio(facts["required"]), Style: template.CSS("color:" + s + ";background:" + bg)})
	}
	return out
}

func ratio(v any) string {
	if x, ok := v.(float64); ok {
		return strconv.FormatFloat(x, 'f', 2, 64) + ":1"
	}
	return ""
}
