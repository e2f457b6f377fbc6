//! Writing a file so that a failure leaves the old one whole.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path`, replacing it only once they are all on disk: they go to a new file
/// beside it, which is synced and then renamed over `path`. So a write that fails partway (a full
/// disk, a file-size limit, a crash) leaves the file that was there as it was, where writing in
/// place would have cut it short. A `path` that is a symbolic link has its target replaced. The
/// new file has the default permissions, not the old one's.
pub(crate) fn write_replacing(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => fs::canonicalize(path)?,
        _ => path.to_path_buf(),
    };
    let staged = staging_path(&target)?;
    let written = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&staged)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&staged, &target)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&staged);
    }
    written
}

/// A name beside `target` that no other write uses: hidden, with this process's id and a count.
fn staging_path(target: &Path) -> io::Result<PathBuf> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let Some(name) = target.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path names no file",
        ));
    };
    let count = WRITES.fetch_add(1, Ordering::Relaxed);
    let mut staged = std::ffi::OsString::from(".");
    staged.push(name);
    staged.push(format!(".{}.{count}.partial", std::process::id()));
    Ok(target.with_file_name(staged))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("teenygrad-file-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn replaces_the_file_and_leaves_nothing_beside_it() {
        let dir = scratch_dir("replace");
        let path = dir.join("w.bin");
        write_replacing(&path, b"old").unwrap();
        write_replacing(&path, b"new contents").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new contents");
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["w.bin"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_cleans_up() {
        let dir = scratch_dir("fail");
        let path = dir.join("w.bin");
        write_replacing(&path, b"good").unwrap();
        // The rename cannot replace a directory: the write fails after the staged file exists.
        let blocked = dir.join("sub");
        fs::create_dir(&blocked).unwrap();
        fs::write(blocked.join("inside"), b"x").unwrap();
        assert!(write_replacing(&blocked, b"data").is_err());
        assert_eq!(fs::read(&path).unwrap(), b"good");
        let mut names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["sub", "w.bin"]);
        assert!(write_replacing(Path::new("/"), b"x").is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_keeps_pointing_at_its_replaced_target() {
        let dir = scratch_dir("link");
        let (target, link) = (dir.join("real.bin"), dir.join("link.bin"));
        fs::write(&target, b"old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_replacing(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(fs::read(&target).unwrap(), b"new");
        fs::remove_dir_all(&dir).unwrap();
    }
}
