package shard

import "strings"

// Tree keys. A node's key is its path with every '/' replaced by keySep, and "" for the root:
// "/a/b" has key "\x01a\x01b". keySep sorts below every byte a valid node name can contain
// (validatePath rejects U+0001..U+001F), so the key of a node is the shared prefix of its whole
// subtree, and the subtree of key k is the contiguous range [k+"\x01", k+"\x02"). The children of
// k are the keys in that range with no further keySep; listing them skips each child's subtree
// with one seek.
const (
	keySep    = '\x01'
	keySepEnd = '\x02'
)

// keyOf maps a path to its tree key. ok is false for a string that cannot name a node (not
// starting with '/', or containing keySep, which would otherwise alias another path); other
// malformed paths map to keys that no node has.
func keyOf(path string) (string, bool) {
	if path == "/" {
		return "", true
	}
	if path == "" || path[0] != '/' || strings.IndexByte(path, keySep) >= 0 {
		return "", false
	}
	return strings.ReplaceAll(path, "/", "\x01"), true
}

// pathOf maps a tree key back to its path.
func pathOf(key string) string {
	if key == "" {
		return "/"
	}
	return strings.ReplaceAll(key, "\x01", "/")
}

// subtreeRange returns the key range holding the strict descendants of key.
func subtreeRange(key string) (lo, hi string) {
	return key + "\x01", key + "\x02"
}

// splitParent splits a path at its last '/' as ZooKeeper does (path.substring(0, lastSlash)):
// the parent of "/a" is "" (the root), of "/a/" is "/a". ok is false when there is no '/'.
func splitParent(path string) (parent string, ok bool) {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return "", false
	}
	return path[:i], true
}

// parentKey maps a parent path as returned by splitParent ("" for the root) to its key.
func parentKey(parent string) (string, bool) {
	if parent == "" {
		return "", true
	}
	return keyOf(parent)
}

// displayParent is the path of a parent as ZooKeeper reports it in events ("/" for the root).
func displayParent(parent string) string {
	if parent == "" {
		return "/"
	}
	return parent
}

// validatePath is ZooKeeper's PathUtils.validatePath, applied to the path's UTF-16 code units:
// it must start with '/', must not end with '/' (except the root), and must not contain empty
// segments, "." or ".." segments, NUL, or the code units U+0001..U+001F, U+007F..U+009F,
// U+D800..U+F8FF (so every character outside the BMP, which Java encodes as surrogates) and
// U+FFF0..U+FFFF. Bytes that are not valid UTF-8 decode as U+FFFD in Java and are rejected too.
func validatePath(path string) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	if len(path) == 1 {
		return true
	}
	if path[len(path)-1] == '/' {
		return false
	}
	last := rune('/')
	for i, r := range path[1:] {
		i++ // index in path
		switch {
		case r == 0:
			return false
		case r == '/' && last == '/':
			return false
		case r == '.' && (last == '/' || (last == '.' && i >= 2 && path[i-2] == '/')):
			if i+1 == len(path) || path[i+1] == '/' {
				return false
			}
		case r <= 0x1f, r >= 0x7f && r <= 0x9f, r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0:
			// r == utf8.RuneError (U+FFFD) for invalid UTF-8 falls in the last range.
			return false
		}
		last = r
	}
	return true
}
