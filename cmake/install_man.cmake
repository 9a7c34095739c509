# Installs the man pages (run by `cmake --install`, see install.cmake). They
# were generated at build time naming the documentation directory of the
# configured prefix; the prefix of the install itself (`--prefix DIR`, or
# /usr for the Debian package) is known only now, so that name is rewritten
# here: a page names the directory its own install put the documentation in.
# In: GPUSHARE_MAN_BUILT (the generated pages), GPUSHARE_DOCDIR_BUILT (the
# directory they name), GPUSHARE_DOCDIR and GPUSHARE_MANDIR (as configured,
# relative to the prefix unless absolute).
foreach(dir DOCDIR MANDIR)
  if(IS_ABSOLUTE "${GPUSHARE_${dir}}")
    set(${dir} "${GPUSHARE_${dir}}")
  else()
    set(${dir} "${CMAKE_INSTALL_PREFIX}/${GPUSHARE_${dir}}")
  endif()
endforeach()
# The path as man/help2man.py writes it in roff.
function(roff_escape out s)
  string(REPLACE "\\" "\\e" s "${s}")
  string(REPLACE "-" "\\-" s "${s}")
  set(${out} "${s}" PARENT_SCOPE)
endfunction()
roff_escape(built "${GPUSHARE_DOCDIR_BUILT}")
roff_escape(now "${DOCDIR}")
set(staged "${GPUSHARE_MAN_BUILT}-install")
file(REMOVE_RECURSE "${staged}")
file(MAKE_DIRECTORY "${staged}")
file(GLOB pages "${GPUSHARE_MAN_BUILT}/*.1")
foreach(page IN LISTS pages)
  get_filename_component(name "${page}" NAME)
  file(READ "${page}" text)
  string(REPLACE ".IR ${built} .\n" ".IR ${now} .\n" text "${text}")
  file(WRITE "${staged}/${name}" "${text}")
endforeach()
file(GLOB pages "${staged}/*.1")
file(INSTALL DESTINATION "${MANDIR}/man1" TYPE FILE FILES ${pages})
