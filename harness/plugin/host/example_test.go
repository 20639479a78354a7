package host_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin/host"
)

// A server registers the plugins of its plugins directory next to its
// built-ins, and closes them when it stops.
func Example() {
	dir, _ := os.MkdirTemp("", "plugins")
	defer os.RemoveAll(dir)

	plugins, err := host.New(host.Options{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer plugins.Close()
	reg := harness.NewRegistry()
	// ... register the built-ins first: a plugin does not replace one.
	if err := plugins.Register(reg); err != nil {
		log.Print(err) // the plugins whose names were taken
	}
	// Optionally start them now, to learn their versions:
	for _, s := range plugins.List() {
		if err := plugins.Start(context.Background(), s.Name); err != nil {
			log.Print(err)
		}
	}
	fmt.Println(len(plugins.List()), "plugins")
	// Output: 0 plugins
}
