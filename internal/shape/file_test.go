package shape

import "os"

func writeFile(name, src string) error { return os.WriteFile(name, []byte(src), 0o644) }
