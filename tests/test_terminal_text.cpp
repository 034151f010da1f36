// The CLI's error lines show control characters escaped (cli/terminal_text.hpp): a name quoted
// from a file or the command line cannot move the cursor, clear the screen or fake a new line.
#include <doctest/doctest.h>

#include "../cli/terminal_text.hpp"

TEST_CASE("terminal text: control characters escaped, everything else as it was") {
  using pipetwin::cli::printable;
  CHECK(printable("unknown model 'resnet-56' (known: ...)") == "unknown model 'resnet-56' (known: ...)");
  CHECK(printable("a\nb\rc\td") == "a\\nb\\rc\\td");
  CHECK(printable("\x1b[2Jred") == "\\x1b[2Jred");
  CHECK(printable(std::string("nul\0here", 8)) == "nul\\x00here");
  CHECK(printable("del\x7f") == "del\\x7f");
  CHECK(printable("mémoire · µs") == "mémoire · µs");  // UTF-8 bytes are not control characters
}
