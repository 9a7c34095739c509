# Installation layout (cmake --install) and the Debian package (cpack -G DEB).
#   bin/gpushare                         the command line (cli/CMakeLists.txt)
#   libexec/gpushare/gpushare-worker     found by gpushare relative to itself
#   libexec/gpushare/gpushare-probe      gpushare check's built-in probe (with CUDA; workloads/CMakeLists.txt)
#   include/gpushare/*.h                 the public API, client.h included (not internal/)
#   lib/libgpushare.a (+ libgpushare-core.a), lib/pkgconfig/gpushare.pc
#   share/man/man1/gpushare*.1           generated from --help (see below), naming this prefix's doc dir
#   share/bash-completion/completions/gpushare, zsh: _gpushare
#   share/doc/gpushare/                  the documentation (docs/*.md)
#   share/doc/gpushare/examples/slurm/   the Slurm batch scripts (examples/slurm)
#   share/gpushare/grafana/              the Grafana dashboard, the DCGM recording rules and the alerting rules

install(TARGETS gpushare-worker RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/gpushare)
# libgpushare.a and, when the library is split, the core it links
# (libgpushare-core.a: what a worker process needs).
set(GPUSHARE_PC_LIBS "-lgpushare")
install(TARGETS gpushare ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TARGET gpushare-core)
  install(TARGETS gpushare-core ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  string(APPEND GPUSHARE_PC_LIBS " -lgpushare-core")
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/gpushare DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "internal" EXCLUDE)

# pkg-config: what libgpushare.a needs comes from the modules it was built with.
set(GPUSHARE_PC_REQUIRES "libcjson libmicrohttpd yaml-0.1")
if(CAIRO_FOUND)
  string(APPEND GPUSHARE_PC_REQUIRES " cairo fontconfig")
endif()
# The prefix is found from the .pc file's own place, so the file stays right
# wherever the tree is installed (cmake --install --prefix, the package).
file(RELATIVE_PATH GPUSHARE_PC_UP /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
set(GPUSHARE_PC_PREFIX "\${pcfiledir}/${GPUSHARE_PC_UP}")
string(REGEX REPLACE "/$" "" GPUSHARE_PC_PREFIX "${GPUSHARE_PC_PREFIX}")
set(GPUSHARE_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
set(GPUSHARE_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/gpushare.pc.in ${PROJECT_BINARY_DIR}/gpushare.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/gpushare.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Man pages: gpushare(1) and gpushare-<command>(1) for every command of the
# dispatch table. They are generated at build time from the built binary's
# own `--help` output (man/help2man.py turns that text into roff), so the
# help text in cli/ is the single source of both: a line added to a
# command's help appears in its man page at the next build, and neither can
# drift from the other. (Keeping the text in separate files, generated into
# C strings, would make every help edit a two-language change; running the
# binary keeps the help where the options are parsed.)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
# Each page also carries the prose docs/cli.md is written from (docs/cli/*.md).
set(GPUSHARE_MAN_DIR ${PROJECT_BINARY_DIR}/man)
file(GLOB GPUSHARE_CLI_PROSE CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/cli/*.md)
add_custom_command(OUTPUT ${GPUSHARE_MAN_DIR}/gpushare.1
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${GPUSHARE_MAN_DIR}
  COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
          ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/man/help2man.py
          --gpushare $<TARGET_FILE:gpushare-cli> --version ${PROJECT_VERSION}
          --docdir ${CMAKE_INSTALL_FULL_DOCDIR} --out ${GPUSHARE_MAN_DIR} --prose ${PROJECT_SOURCE_DIR}/docs/cli
  DEPENDS gpushare-cli ${PROJECT_SOURCE_DIR}/man/help2man.py ${GPUSHARE_CLI_PROSE}
  COMMENT "Generating the man pages from gpushare --help"
  VERBATIM)
add_custom_target(gpushare-man ALL DEPENDS ${GPUSHARE_MAN_DIR}/gpushare.1)
# The pages name the documentation directory of the prefix they are
# installed under, which `cmake --install --prefix DIR` may change.
install(CODE "set(GPUSHARE_MAN_BUILT \"${GPUSHARE_MAN_DIR}\")
set(GPUSHARE_DOCDIR_BUILT \"${CMAKE_INSTALL_FULL_DOCDIR}\")
set(GPUSHARE_DOCDIR \"${CMAKE_INSTALL_DOCDIR}\")
set(GPUSHARE_MANDIR \"${CMAKE_INSTALL_MANDIR}\")
include(\"${CMAKE_CURRENT_LIST_DIR}/install_man.cmake\")")

# docs/cli.md is committed but written from the same tables plus the prose
# of docs/cli/*.md (scripts/gen_cli_doc.py): `cmake --build build --target
# cli-doc` rewrites it, and the test check.cli_doc refuses a stale copy.
add_custom_target(cli-doc
  COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
          ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/gen_cli_doc.py --gpushare $<TARGET_FILE:gpushare-cli>
  DEPENDS gpushare-cli
  COMMENT "Writing docs/cli.md from docs/cli/*.md and the option tables"
  VERBATIM)

# Shell completion. zsh looks in vendor-completions for packages of the
# distribution (prefix /usr) and in site-functions elsewhere.
install(FILES ${PROJECT_SOURCE_DIR}/completion/gpushare.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME gpushare)
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(GPUSHARE_ZSH_DIR ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
else()
  set(GPUSHARE_ZSH_DIR ${CMAKE_INSTALL_DATADIR}/zsh/site-functions)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/completion/_gpushare DESTINATION ${GPUSHARE_ZSH_DIR})

install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}
        FILES_MATCHING PATTERN "*.md" PATTERN "*.json" PATTERN "results" EXCLUDE PATTERN "cli" EXCLUDE)
install(FILES ${PROJECT_SOURCE_DIR}/python/gpushare_client.py DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/slurm/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples/slurm)
install(FILES ${PROJECT_SOURCE_DIR}/grafana/gpushare-dashboard.json ${PROJECT_SOURCE_DIR}/grafana/recording-rules.yml
              ${PROJECT_SOURCE_DIR}/grafana/alert-rules.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/gpushare/grafana)

# The Debian package: cpack -G DEB in the build directory, installed under /usr.
# Its runtime dependencies are read from the binaries by dpkg-shlibdeps.
set(CPACK_PACKAGE_NAME gpushare)
set(CPACK_PACKAGE_VENDOR "gpushare")
set(CPACK_PACKAGE_CONTACT "gpushare maintainers <gpushare@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "share NVIDIA GPUs among processes and measure which way wins")
set(CPACK_PACKAGE_DESCRIPTION "gpushare runs workers under time-slicing, MPS, MPS with limits, MIG\n\
or streams, everything else equal, and reports throughput, latency and\n\
fairness with confidence intervals; it manages MPS daemons and exports\n\
Prometheus metrics. The NVIDIA driver is loaded at run time when present.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "fonts-dejavu-core")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nvidia-cuda-mps")
set(CPACK_STRIP_FILES ON)
include(CPack)
