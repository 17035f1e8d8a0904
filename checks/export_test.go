package checks

import "context"

// UnnamedBothWays finds the unnamed controls of the page in ctx once from
// the candidates and once from the whole accessibility tree, so a test can
// hold the shortcut to the tree's answer.
func UnnamedBothWays(ctx context.Context) (fast, full []Unnamed, err error) {
	var a, b Snapshot
	if err := collectUnnamed(ctx, &a); err != nil {
		return nil, nil, err
	}
	if err := unnamedFromTree(ctx, &b); err != nil {
		return nil, nil, err
	}
	return a.Unnamed, b.Unnamed, nil
}
