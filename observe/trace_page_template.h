// The page `tutti trace html` writes, as observe/trace_page.html holds it: the build
// embeds the file (observe/CMakeLists.txt), so that the command needs nothing beside it.
#pragma once

#include <string_view>

namespace tutti::observe {

// Holds /*TUTTI_TRACE_DATA*/ once, where the timeline's JSON goes.
extern const std::string_view kTracePageTemplate;

}  // namespace tutti::observe
