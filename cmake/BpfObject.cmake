# bpf_object(NAME SOURCE [HEADERS...])
# Compiles bpf/<NAME>.bpf.c with clang -target bpf, generates <NAME>.skel.h with bpftool,
# and exports the INTERFACE target <NAME>_skel (include dir = the generated header's dir).
# Mirrors libbpf-bootstrap's FindBpfObject.cmake; vmlinux.h is the checked-in one.
find_program(BPF_CLANG NAMES clang-14 clang REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)
execute_process(COMMAND ${CMAKE_C_COMPILER} -print-multiarch
                OUTPUT_VARIABLE BPF_MULTIARCH OUTPUT_STRIP_TRAILING_WHITESPACE)

function(bpf_object name source)
  set(bpf_o ${CMAKE_CURRENT_BINARY_DIR}/${name}.bpf.o)
  set(skel_dir ${CMAKE_CURRENT_BINARY_DIR}/skel)
  set(skel_h ${skel_dir}/${name}.skel.h)
  add_custom_command(
    OUTPUT ${bpf_o}
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_x86
            -Wall -Werror -Wno-unused-function
            -I${CMAKE_CURRENT_SOURCE_DIR}/vmlinux/x86
            -I${CMAKE_CURRENT_SOURCE_DIR}/include
            -I/usr/include/${BPF_MULTIARCH}
            -c ${CMAKE_CURRENT_SOURCE_DIR}/${source} -o ${bpf_o}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${source} ${ARGN}
    COMMENT "BPF ${source}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel_h}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${skel_dir}
    COMMAND ${BPFTOOL} gen skeleton ${bpf_o} name ${name} > ${skel_h}
    DEPENDS ${bpf_o}
    COMMENT "skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}_skel_gen DEPENDS ${skel_h})
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${skel_dir})
  target_link_libraries(${name}_skel INTERFACE PkgConfig::LIBBPF)
endfunction()
