use coldtrace_syscalls::*;
use std::ffi::CString;

#[test]
fn smoke() {
    let path = find_program(b"sh", Some(b"/usr/bin:/bin")).unwrap();
    let prog = Program::new(path, vec![CString::new("sh").unwrap(), CString::new("-c").unwrap(), CString::new("echo hi; exit 3").unwrap()], vec![]);
    let mut stack = ChildStack::new().unwrap();
    let mut child = prog.spawn(&SpawnOptions::default(), &mut stack).unwrap();
    assert_eq!(child.wait(None, None).unwrap(), WaitEvent::Exited);
    let (st, ru) = child.reap().unwrap();
    eprintln!("{st} {ru:?}");
    assert_eq!(st.code(), Some(3));
    let bad = Program::new(CString::new("/nonexistent").unwrap(), vec![CString::new("x").unwrap()], vec![]);
    let e = bad.spawn(&SpawnOptions::default(), &mut stack).unwrap_err();
    eprintln!("{e:?}");
    assert_eq!(e.errno, Errno::NOENT);
}
