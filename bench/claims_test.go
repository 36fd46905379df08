package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestClaimsQuoteTheDocs checks that every phrase the claims table quotes
// from a doc.go is still in that doc.go ("..." marks an elision), so the
// scoreboard's "promised" and "named" follow the docs as they change.
func TestClaimsQuoteTheDocs(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	doc := func(path string) string {
		if d, ok := docs[path]; ok {
			return d
		}
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatalf("claims cite %s: %v", path, err)
		}
		var text []string
		for _, ln := range strings.Split(string(b), "\n") {
			text = append(text, strings.TrimPrefix(strings.TrimSpace(ln), "//"))
		}
		docs[path] = strings.Join(strings.Fields(strings.Join(text, " ")), " ")
		return docs[path]
	}
	cite := regexp.MustCompile(`([a-z]+/doc\.go|README\.md|[a-z]+/[a-z]+\.go):? "([^"]+)"`)
	for impl, table := range claims {
		for sch, c := range table {
			for _, m := range cite.FindAllStringSubmatch(c.source, -1) {
				text := doc(m[1])
				for _, part := range strings.Split(m[2], "...") {
					part = strings.Join(strings.Fields(part), " ")
					if part != "" && !strings.Contains(text, part) {
						t.Errorf("claims[%s][%s] quotes %s: %q is not in it any more", impl, sch, m[1], part)
					}
				}
			}
		}
	}
}
