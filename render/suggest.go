package render

import "strings"

// maxSuggested is the longest name a suggestion is looked for (known names are much shorter).
const maxSuggested = 64

// suggest returns the known name closest to s, or "" when none is close enough to be a
// plausible typo.
func suggest(s string, known []string) string {
	if len(s) > maxSuggested {
		return "" // far from every known name; and the distance costs len(s) per name
	}
	best, bestDist := "", -1
	for _, k := range known {
		if strings.EqualFold(k, s) {
			return k
		}
		d := levenshtein(strings.ToLower(s), strings.ToLower(k))
		if bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	limit := max(2, len(s)/3)
	if bestDist < 0 || bestDist > limit {
		return ""
	}
	return best
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
