package registry

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Summary says what a registry check covered: whether it ran, and of the images it had to
// ask about, how many were found, missing, or not verified, and why not. Every output that
// reports a check prints it, so that "nothing missing" is never said of images nobody could
// ask about.
type Summary struct {
	// Checked says whether the registries were asked at all (--check-images).
	Checked bool `json:"checked"`
	// Images is the number of distinct images the check covers: Found + Missing + NotVerified.
	Images int `json:"images"`
	// Found answered 200, Missing 404 (only a 404 counts as missing).
	Found   int `json:"found"`
	Missing int `json:"missing"`
	// NotVerified are the images no registry answered about (Warnings); NotVerifiedBy counts
	// them by Reason (unreachable, timeout, tls, dns, unauthorized, forbidden, ...).
	NotVerified   int            `json:"notVerified"`
	NotVerifiedBy map[Reason]int `json:"notVerifiedBy"`
}

// NotChecked is the Summary of a run without a registry check.
func NotChecked() Summary { return Summary{NotVerifiedBy: map[Reason]int{}} }

// Summarize counts the results of the distinct non-empty images: an image without a result
// was not verified (ReasonNotChecked).
func Summarize(images []string, results map[string]ImageResult) Summary {
	s := Summary{Checked: true, NotVerifiedBy: map[Reason]int{}}
	seen := map[string]bool{}
	for _, img := range images {
		if img == "" || seen[img] {
			continue
		}
		seen[img] = true
		s.Images++
		r, ok := results[img]
		switch {
		case !ok:
			s.NotVerified++
			s.NotVerifiedBy[ReasonNotChecked]++
		case r.Status == Found:
			s.Found++
		case r.Status == NotFound:
			s.Missing++
		default:
			s.NotVerified++
			s.NotVerifiedBy[cmpReason(r.Reason)]++
		}
	}
	return s
}

func cmpReason(r Reason) Reason {
	if r == "" {
		return ReasonOther
	}
	return r
}

// Verified reports whether every image the check covers was answered for (found or missing):
// false without a check.
func (s Summary) Verified() bool { return s.Checked && s.NotVerified == 0 }

// Why is the not-verified count by reason, in words: "2 unreachable, 1 timeout" (reasons
// sorted by count, then name).
func (s Summary) Why() string {
	reasons := slices.SortedFunc(maps.Keys(s.NotVerifiedBy), func(a, b Reason) int {
		if d := s.NotVerifiedBy[b] - s.NotVerifiedBy[a]; d != 0 {
			return d
		}
		return strings.Compare(string(a), string(b))
	})
	parts := make([]string, 0, len(reasons))
	for _, r := range reasons {
		if n := s.NotVerifiedBy[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
	}
	return strings.Join(parts, ", ")
}

// String says it in one line, for people: "images not checked (run with --check-images)",
// "3 images checked: all 3 found", "8 images checked: 4 found, 2 missing, 2 NOT VERIFIED
// (1 unreachable, 1 timeout)".
func (s Summary) String() string {
	switch {
	case !s.Checked:
		return "images not checked (run with --check-images)"
	case s.Images == 0:
		return "no image to check (no pool has a composed image)"
	case s.Found == s.Images:
		return fmt.Sprintf("%s checked: all found", plural(s.Images, "image"))
	}
	parts := []string{fmt.Sprintf("%d found", s.Found), fmt.Sprintf("%d missing", s.Missing)}
	if s.NotVerified > 0 {
		parts = append(parts, fmt.Sprintf("%d NOT VERIFIED (%s)", s.NotVerified, s.Why()))
	}
	return fmt.Sprintf("%s checked: %s", plural(s.Images, "image"), strings.Join(parts, ", "))
}

// Caveat is what a reader must know when images were not verified, "" otherwise.
func (s Summary) Caveat() string {
	if !s.Checked || s.NotVerified == 0 {
		return ""
	}
	return fmt.Sprintf("no registry answered for %s: nothing says whether they exist; their pools proceed and the kubelet decides whether the pull succeeds",
		plural(s.NotVerified, "image"))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
