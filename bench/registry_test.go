package main

import "testing"

// TestRegistryTraits fails when a registered lock lacks a trait the bench
// and its reports need.
func TestRegistryTraits(t *testing.T) {
	for name, im := range registry {
		if im.connect == nil || im.gaveUp == nil {
			t.Errorf("%s: registered without connect or gaveUp", name)
		}
		switch im.kind {
		case kindOurs, kindPeer, kindFloor, kindNaive:
		default:
			t.Errorf("%s: kind %q is none of ours, peer, floor, naive", name, im.kind)
		}
		if im.noFaults != "" || im.kind == kindFloor || im.kind == kindPeer {
			continue
		}
		if len(im.claims) == 0 {
			t.Errorf("%s runs under the fault scoreboard but claims nothing (its claims field)", name)
		}
		if im.kind != kindOurs {
			continue
		}
		for _, s := range schedules {
			if _, ok := im.claims[s.id]; s.appliesTo(im) && !ok {
				t.Errorf("%s: schedule %q applies to it but its claims say nothing about it", name, s.id)
			}
		}
	}
}
