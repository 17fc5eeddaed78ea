package cluster

import (
	"fmt"
	"strings"

	"github.com/driverguard/driverguard/operator"
)

// Source says where one part of a cluster view came from, so that every command can say what
// it judged against — and what it did not see — instead of reading a missing or empty input
// as "all clear".
type Source struct {
	// Given is whether this part was read at all: a file was given, or the cluster was read
	// live. A part not given is unknown, not empty.
	Given bool `json:"given"`
	// From names where it was read: the flag and the file ("--nodes nodes.yaml"), or the
	// live cluster ("the cluster of context \"prod\" (https://...)"); "" when not given.
	From string `json:"from"`
	// Count is the number of objects read.
	Count int `json:"count"`
}

// Sources say what a State was read from, part by part.
type Sources struct {
	Nodes         Source `json:"nodes"`
	Drivers       Source `json:"drivers"`
	ClusterPolicy Source `json:"clusterPolicy"`
	Workloads     Source `json:"workloads"`
}

// fileSource is the source of a file given with flag (path "" is a file not given).
func fileSource(flag, path string, count int) Source {
	if path == "" {
		return Source{}
	}
	if path == "-" {
		return Source{Given: true, From: flag + " - (standard input)", Count: count}
	}
	return Source{Given: true, From: flag + " " + path, Count: count}
}

// liveSource is the source of a part read from the live cluster named by from.
func liveSource(from string, count int) Source {
	return Source{Given: true, From: from, Count: count}
}

// Describe says in a few words what one part holds and where it came from, for people:
// "11 nodes read from --nodes nodes.yaml", "0 nodes read from --nodes /dev/fd/63",
// "RBLNDrivers: not given". what is singular and plural ("node", "nodes").
func (s Source) Describe(one, many string) string {
	if !s.Given {
		return many + ": not given"
	}
	noun := many
	if s.Count == 1 {
		noun = one
	}
	return fmt.Sprintf("%d %s read from %s", s.Count, noun, s.From)
}

// DriversKnown reports whether the RBLNDrivers of the cluster are known: read from a file or
// the live cluster, or given as a list. Without them a node's current driver can only be read
// from its owner label.
func (s *State) DriversKnown() bool { return !s.driversUnknown }

// Sources say what the State was read from; a State built from lists was read from nothing
// (every part not given) but holds what it was given.
func (s *State) Sources() Sources { return s.sources }

// SetSources records what the State was read from; drivers not given make them unknown
// (see DriversKnown).
func (s *State) SetSources(src Sources) {
	s.sources = src
	s.driversUnknown = !src.Drivers.Given
}

// InputWarnings are the inputs of s that look like a failed read rather than a cluster: a
// node inventory that holds no node, a driver list that holds no RBLNDriver while nodes
// carry owner labels (every label then reads as stale, and no loss can be seen), and a
// workload stream without pods (every cluster runs some: no drain blocker can be seen).
func (s *State) InputWarnings() []string {
	src := s.sources
	var out []string
	if n := src.Nodes; n.Given && n.Count == 0 && strings.HasPrefix(n.From, "--") {
		out = append(out, fmt.Sprintf("%s holds no nodes: routing, ties and driver loss were judged against a cluster without nodes; "+
			"if the command that wrote it failed (kubectl get nodes -o yaml), fix it and run again", n.From))
	}
	if d := src.Drivers; d.Given && d.Count == 0 && strings.HasPrefix(d.From, "--") {
		labelled := 0
		for _, n := range s.nodes {
			if n.Labels[operator.LabelOwner] != "" {
				labelled++
			}
		}
		if labelled > 0 {
			out = append(out, fmt.Sprintf("%s holds no RBLNDrivers, but %d nodes carry a %s label: each is read as stale and none can lose its driver; "+
				"if the command that wrote it failed (kubectl get rblndrivers -o yaml), fix it and run again", d.From, labelled, operator.LabelOwner))
		}
	}
	if p := src.Workloads; p.Given && p.Count == 0 && strings.HasPrefix(p.From, "--") {
		out = append(out, fmt.Sprintf("%s holds no pods: drain blockers were judged against a cluster without pods; "+
			"if the command that wrote it failed (kubectl get pods,pdb,rs,deploy,sts -A -o json), fix it and run again", p.From))
	}
	return out
}
