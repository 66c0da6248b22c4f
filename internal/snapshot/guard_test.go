package snapshot

import "testing"

func TestCheckOverwrite(t *testing.T) {
	t.Parallel()
	const mine, theirs = "uid-mine", "uid-theirs"
	cases := []struct {
		name     string
		existing Existing
		uid      string
		refused  bool
	}{
		{"nothing there", Existing{}, mine, false},
		{"own artifact from an earlier attempt", Existing{Present: true, UID: mine}, mine, false},
		{"another snapshot's artifact", Existing{Present: true, UID: theirs}, mine, true},
		{"artifact without a recorded UID", Existing{Present: true}, mine, true},
		{"no UID given never matches a missing one", Existing{Present: true}, "", true},
	}
	for _, c := range cases {
		err := CheckOverwrite(c.existing, c.uid)
		if got := err != nil; got != c.refused {
			t.Errorf("%s: CheckOverwrite = %v, refused want %v", c.name, err, c.refused)
		}
		if err != nil && ReasonOf(err) != ReasonArtifactExists {
			t.Errorf("%s: reason %q, want ArtifactExists", c.name, ReasonOf(err))
		}
	}
}
