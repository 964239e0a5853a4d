# The optional parts of the build (the Lua module, the REPL, the Python package, the
# tests): each is a cache variable AUTO, ON or OFF. AUTO builds the part where its
# dependencies are found and leaves it out, with one configure line saying which
# dependency was missing, where they are not; ON makes a missing dependency a
# configure error (scripts/dev.sh test asks for everything so); OFF leaves it out.
# The library itself needs only libuv and UCX.

# tutti_part(VAR "what it is")
function(tutti_part var doc)
  set(${var} AUTO CACHE STRING "${doc}: AUTO (where its dependencies are found), ON or OFF")
  set_property(CACHE ${var} PROPERTY STRINGS AUTO ON OFF)
endfunction()

# tutti_decide(VAR "name in messages" [DEPENDENCY_TEXT FOUND_VARIABLE]...)
# Sets VAR_ENABLED in the caller to ON or OFF and says which in one configure line.
function(tutti_decide var what)
  set(missing "")
  set(args ${ARGN})
  while(args)
    list(POP_FRONT args dependency found)
    if(NOT ${found})
      list(APPEND missing "${dependency}")
    endif()
  endwhile()
  string(REPLACE ";" ", " missing "${missing}")
  string(TOUPPER "${${var}}" choice)
  set(enabled ON)
  if(NOT choice STREQUAL "AUTO" AND NOT ${var})
    set(enabled OFF)
    message(STATUS "tutti: ${what} OFF (${var}=${${var}})")
  elseif(missing AND choice STREQUAL "AUTO")
    set(enabled OFF)
    message(STATUS "tutti: ${what} OFF (not found: ${missing}; install what is missing, or set ${var}=OFF to silence this)")
  elseif(missing)
    message(FATAL_ERROR "tutti: ${var}=${${var}} but ${what} needs what was not found: ${missing}; "
                        "install it (scripts/dev.sh installs everything), or set ${var}=AUTO or OFF")
  else()
    message(STATUS "tutti: ${what} ON")
  endif()
  set(${var}_ENABLED ${enabled} PARENT_SCOPE)
endfunction()
